// Section 4's prompt presets. The copy-heavy one is the benchmark's task for prompt lookup: a
// Shakespeare passage the models never trained on, followed by its own first 20 bytes, so a
// model that has learnt to continue what it has seen goes on copying, and prompt lookup (which
// proposes what followed the last earlier occurrence of the last few tokens) finds every draft
// in the prompt. The passage is embedded: the page never fetches the corpus.

/**
 * 149 bytes of tinyshakespeare.txt at byte offset 1,004,770 of 1,115,394 (90.08 %), i.e. in
 * the last 10 % that models/train.py holds out for validation (The Taming of the Shrew, II.1).
 */
export const HELD_OUT_PASSAGE = "BAPTISTA:\nYou're welcome, sir; and he, for your good sake.\n"
  + 'But for my daughter Katharina, this I know,\n'
  + 'She is not for your turn, the more my grief.\n\n';

/** The passage, then its first 20 bytes: the model is asked to continue a repetition. */
export const COPY_PRESET = HELD_OUT_PASSAGE + HELD_OUT_PASSAGE.slice(0, 20);

export const PROMPT_PRESETS = {
  romeo: { prompt: 'ROMEO:', note: '' },
  copy: {
    prompt: COPY_PRESET,
    note: 'A held-out passage of 149 bytes followed by its own first 20: the text that should come next is '
      + 'already in the prompt. Try the prompt lookup drafter (or both) with temperature 0. The models copy '
      + 'the passage when shown it (the small target\'s top choice is its next byte at 85% of positions) but '
      + 'not when they write on their own: greedy, the small target keeps to it for 9 bytes and matches 14 of '
      + 'the next 60 (the large one 0, and 2 of 60). So lookup pays at temperature 0 (about 1.1× plain on the '
      + 'small pair, 1.4× on the large) and specdec takes plain steps where it stops paying.',
  },
};
