# Sourced by the other scripts: installs what is missing (Debian packages as root, npm packages).
# Usage: ensure_apt PKG...   — installs the Debian packages not yet installed.

ensure_apt() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "specdec: missing Debian packages: ${missing[*]}" >&2
    echo "         install them as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "specdec: installing ${missing[*]} ..." >&2
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" >/dev/null
}

# The native toolchain: compiler, CMake, GoogleTest, xtensor.
ensure_native_deps() {
  ensure_apt cmake g++ make libgtest-dev libxtensor-dev
}

jobs() { nproc 2>/dev/null || echo 2; }

# Node packages of package-lock.json (npm ci) unless node_modules is already up to date.
ensure_node_modules() {
  if ! command -v npm >/dev/null; then
    echo "specdec: Node.js >= 20 with npm is needed (https://nodejs.org or NodeSource)" >&2
    exit 1
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    echo "specdec: Node.js $(node --version) is too old; Vite 8 needs >= 20" >&2
    exit 1
  fi
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    # onnxruntime-node (a dependency of transformers.js, a devDependency) downloads CUDA
    # libraries in its postinstall, which fails without network; ONNXRUNTIME_NODE_INSTALL=skip is
    # its documented switch (the CPU binaries ship inside the npm package).
    ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund
  fi
}
