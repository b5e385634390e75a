// The hostile generators' random numbers: xorshift32 from a fixed seed, so a failing case
// replays (tests/fuzz/*-fuzz.test.mjs).

/** rand() in [0, 1), int(n) in 0..n-1, pick(xs), chance(p), all from one seed (a nonzero u32). */
export function seeded(seed) {
  let s = seed >>> 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
  const int = (n) => Math.floor(rand() * n);
  return { rand, int, pick: (xs) => xs[int(xs.length)], chance: (p) => rand() < p };
}
