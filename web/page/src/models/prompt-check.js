// Section 4's prompt, checked against the tokenizer of the models in use before any run: a
// checkpoint's tokenizer (worker 'check-prompt') refuses text it cannot spell, naming the
// character and its offset (specdec/tokenizer's SpecdecError), and the page says so under the
// prompt as it is typed or loaded — nothing is dropped. Issue 56: with a tokenizer of the
// bytes 0..79, "ROMEO:" ran as "OMEO:" and nobody was told. The page's byte-level pairs spell
// any text: no check, nothing shown.
import { h } from '../shared/svg.js';

/** @param {{ client: import('../shared/client.js').ModelClient }} o */
export function initPromptCheck({ client }) {
  const prompt = document.getElementById('prompt');
  const note = h('p', {
    class: 'pair-note',
    id: 'prompt-problem',
    role: 'alert',
    'data-testid': 'prompt-problem',
    hidden: true,
  });
  (document.getElementById('prompt-note') ?? prompt).after(note);
  let asked = 0;

  function show(problem) {
    note.hidden = !problem;
    note.textContent = problem
      ? `The models’ tokenizer cannot encode this prompt: ${problem}. Change or remove that character before running.`
      : '';
    for (const [name, value] of [
      ['aria-invalid', 'true'],
      ['aria-describedby', 'prompt-problem'],
    ]) {
      if (problem) prompt.setAttribute(name, value);
      else prompt.removeAttribute(name);
    }
  }

  async function check() {
    const mine = ++asked;
    if (!client.info?.target?.tokenizer) return show(null);
    const problem = await client.checkPrompt(prompt.value).catch(() => null);
    if (mine === asked) show(problem);
  }

  prompt.addEventListener('input', check);
  prompt.addEventListener('change', check);
  client.on((ev) => {
    if (ev.type === 'loaded') check();
  });
}
