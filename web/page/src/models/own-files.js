// Section 4, "Your own models": a learner's model files, one per role (target, draft), by file
// picker or drag and drop on the role's zone. A file too big to be a model is refused from its
// size; everything else is checked by the worker's loader (the one that loads the page's
// models), whose message is shown when it refuses. A button goes back to the page's models.
import { fileSizeProblem } from '../shared/limits.js';

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

  async function useFiles(chosen) {
    const roles = Object.keys(chosen);
    const names = roles.map((r) => `the ${r} file “${chosen[r].name}”`).join(' and ');
    if (isBusy()) {
      fileState('error', '', `Stop the running decode before loading ${names}.`);
      return;
    }
    for (const role of roles) {
      const tooBig = fileSizeProblem(chosen[role].size);
      if (tooBig) {
        fileState('error', '', `${role} file “${chosen[role].name}”: ${tooBig}`);
        return;
      }
    }
    fileState('checking', `Checking ${names}…`);
    setBusy(true);
    try {
      await client.loadFiles(chosen);
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
      if (input.files?.length) useFiles({ [role]: input.files[0] });
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
      if (dropped.length !== 1) {
        fileState('error', '', `Drop one file on the ${role} zone (got ${dropped.length}).`);
        return;
      }
      useFiles({ [role]: dropped[0] });
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
      ui.reset.hidden = true;
      fileState('', '');
    },
    setDisabled(b) {
      for (const input of Object.values(ui.inputs)) input.disabled = b;
      ui.reset.disabled = b;
    },
  };
}
