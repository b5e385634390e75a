// Section 4, "Your own models": a learner's model files per role (target, draft), by file
// picker or drag and drop on the role's zone: one of our safetensors files, a GGUF file, or the
// files of a Hugging Face folder picked or dropped together (worker/checkpoints.js tells them
// apart). Our file too big to be a model is refused from its size; everything else is checked by
// the worker's loaders, whose message is shown when they refuse. The File objects go to the
// worker as they are (structured clone: no copy here). A button goes back to the page's models.
import { fileSizeProblem, sizeText } from '../shared/limits.js';
import { folderProblem, isCheckpointFile, isFolder } from '../shared/checkpoint-files.js';

/** The status line of a checkpoint's load: { phase, role, loaded, total } from the worker. */
function progressText(e) {
  const verb = e.phase === 'build' ? 'Building' : 'Reading';
  const pct = e.total > 0 ? `${Math.floor((100 * e.loaded) / e.total)}% ` : '';
  const of = e.total > 0 ? ` of ${sizeText(e.total)}` : '';
  return `${verb} the ${e.role}: ${pct}(${sizeText(e.loaded)}${of})…`;
}

/**
 * @param {object} o
 * @param {import('../shared/client.js').ModelClient} o.client
 * @param {() => boolean} o.isBusy
 * @param {(b: boolean) => void} o.setBusy  section 4's busy state
 */
export function initOwnFiles({ client, isBusy, setBusy }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    inputs: { target: $('model-file-target'), draft: $('model-file-draft') },
    status: $('model-file-status'),
    error: $('model-file-error'),
    reset: $('model-file-reset'),
  };

  function fileState(state, status, error = '') {
    ui.status.dataset.state = state;
    ui.status.textContent = status;
    ui.error.textContent = error;
  }

  // A checkpoint chosen for one role while the other holds one of our byte-level models: kept
  // here until the other role gets a checkpoint too (both then load together).
  let pending = {};
  const other = (role) => (role === 'target' ? 'draft' : 'target');
  const checkpointIn = (role, chosen) =>
    chosen[role] ? chosen[role].some(isCheckpointFile) : !!client.info?.[role]?.tokenizer;

  /** @param {Record<string, File[]>} given  a role's files */
  async function useFiles(given) {
    // What a folder lacks is said now, for the role just given (issue 56: not once the other
    // role is); a checkpoint waiting for the other role keeps waiting.
    for (const [r, files] of Object.entries(given)) {
      const lack =
        isFolder(files) &&
        folderProblem(
          r,
          files.map((f) => f.name),
        );
      if (lack) {
        fileState('error', '', lack);
        return;
      }
    }
    const chosen = { ...pending, ...given };
    pending = {};
    const roles = Object.keys(chosen);
    const nameOf = (r) =>
      chosen[r].length === 1
        ? `the ${r} file “${chosen[r][0].name}”`
        : `the ${r} files ${chosen[r].map((f) => `“${f.name}”`).join(', ')}`;
    const names = roles.map(nameOf).join(' and ');
    if (isBusy()) {
      fileState('error', '', `Stop the running decode before loading ${names}.`);
      return;
    }
    for (const role of roles) {
      const [file] = chosen[role];
      const tooBig = chosen[role].length === 1 && !isCheckpointFile(file) && fileSizeProblem(file.size);
      if (tooBig) {
        fileState('error', '', `${role} file “${file.name}”: ${tooBig}`);
        return;
      }
    }
    const [role] = Object.keys(given);
    if (roles.length === 1 && checkpointIn(role, chosen) && !checkpointIn(other(role), chosen)) {
      pending = chosen;
      fileState(
        'waiting',
        `Chose ${names}: now give the ${other(role)} a checkpoint with the same vocabulary (a checkpoint and the page's byte-level models cannot make a pair).`,
      );
      return;
    }
    if (checkpointIn('target', chosen) !== checkpointIn('draft', chosen)) {
      fileState(
        'error',
        '',
        'A checkpoint (GGUF file or Hugging Face folder) and one of our byte-level model files cannot make a pair: their tokens differ. Give both roles checkpoints with one vocabulary, or both our files.',
      );
      return;
    }
    fileState('checking', `Checking ${names}…`);
    setBusy(true);
    try {
      const onEvent = (e) => e.type === 'progress' && fileState('checking', progressText(e));
      await client.loadFiles(chosen, onEvent);
      fileState('loaded', `Loaded ${names}.`);
      ui.reset.hidden = false;
    } catch (err) {
      fileState('error', '', err.message);
    } finally {
      setBusy(false);
      for (const input of Object.values(ui.inputs)) input.value = ''; // the same file can be chosen again
    }
  }

  for (const [role, input] of Object.entries(ui.inputs)) {
    input.addEventListener('change', () => {
      if (input.files?.length) useFiles({ [role]: Array.from(input.files) });
    });
  }
  const hasFiles = (e) => Array.from(e.dataTransfer?.types ?? []).includes('Files');
  for (const zone of document.querySelectorAll('#own-models .drop')) {
    const role = zone.dataset.role;
    zone.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.stopPropagation();
      e.dataTransfer.dropEffect = 'copy';
      zone.classList.add('over');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.stopPropagation();
      zone.classList.remove('over');
      const dropped = Array.from(e.dataTransfer.files);
      if (dropped.length === 0) {
        fileState('error', '', `Drop a model file, or a Hugging Face folder's files, on the ${role} zone.`);
        return;
      }
      useFiles({ [role]: dropped });
    });
  }
  // A file dropped anywhere else would make the browser leave the page to show it.
  window.addEventListener('dragover', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'none';
  });
  window.addEventListener('drop', (e) => {
    if (hasFiles(e)) e.preventDefault();
  });
  ui.reset.addEventListener('click', async () => {
    if (isBusy()) return;
    fileState('checking', 'Loading the page’s models…');
    setBusy(true);
    try {
      await client.resetModels();
      fileState('loaded', 'Back to the page’s models.');
      ui.reset.hidden = true;
    } catch (err) {
      fileState('error', '', err.message);
    } finally {
      setBusy(false);
    }
  });

  return {
    /** Another pair was picked: the learner's files are no longer loaded. */
    clear() {
      pending = {};
      ui.reset.hidden = true;
      fileState('', '');
    },
    setDisabled(b) {
      for (const input of Object.values(ui.inputs)) input.disabled = b;
      ui.reset.disabled = b;
    },
  };
}
