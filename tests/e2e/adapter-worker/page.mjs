// Starts the worker and shows what it reports; the test reads window.__result.
const status = document.getElementById('status');
const out = document.getElementById('out');
const worker = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
worker.onmessage = ({ data }) => {
  if (data.type === 'progress') {
    status.textContent = data.text;
    return;
  }
  window.__result = data;
  status.textContent = data.type === 'done' ? 'done' : `error: ${data.message}`;
  out.textContent = JSON.stringify(data, null, 2);
};
worker.onerror = (e) => {
  window.__result = { type: 'error', message: e.message };
  status.textContent = `error: ${e.message}`;
};
worker.postMessage({ prompt: 'ROMEO:\nBut soft', tokens: 120, gamma: 4 });
