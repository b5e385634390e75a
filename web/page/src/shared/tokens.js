// Readable labels for tokens: the lesson's toy vocabularies get words, the models' byte-level
// vocabulary gets the character (with visible stand-ins for whitespace and control bytes).

export const TOY = {
  toy4: {
    name: 'Lesson toy, 4 tokens',
    p: [0.5, 0.3, 0.15, 0.05],
    q: [0.4, 0.4, 0.15, 0.05],
    words: ['the', 'cat', 'sat', 'mat'],
  },
  toy6: {
    name: 'Lesson toy, 6 tokens',
    p: [0.4, 0.25, 0.15, 0.1, 0.06, 0.04],
    q: [0.3, 0.3, 0.2, 0.1, 0.06, 0.04],
    words: ['the', 'cat', 'sat', 'on', 'a', 'mat'],
  },
};

/** Label of a toy token: "0·the". */
export function toyLabel(words) {
  return (t) => `${t}·${words[t] ?? '?'}`;
}

/** Visible form of one byte token. */
export function byteLabel(t) {
  if (t === 32) return '␣';
  if (t === 10) return '↵';
  if (t === 9) return '⇥';
  if (t === 13) return '␍';
  if (t < 32 || t === 127) return `\\x${t.toString(16).padStart(2, '0')}`;
  if (t < 127) return String.fromCharCode(t);
  return `\\x${t.toString(16).padStart(2, '0')}`;
}

/** Streaming UTF-8 decoder for byte tokens: push(token) returns the text it completes. */
export function byteTextStream() {
  const dec = new TextDecoder('utf-8', { fatal: false });
  return {
    push: (t) => dec.decode(new Uint8Array([t]), { stream: true }),
    flush: () => dec.decode(),
  };
}

/** Encodes a prompt string as byte tokens. */
export function encodeBytes(text) {
  return Array.from(new TextEncoder().encode(text));
}

/**
 * Text safe to show: C0 control characters (a random model emits them) become their visible
 * Unicode pictures (␀…␟); newlines stay, or become ↵ when oneLine.
 */
export function visibleText(text, oneLine = false) {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]|\n/g, (ch) => {
    if (ch === '\n') return oneLine ? '↵' : '\n';
    const code = ch.charCodeAt(0);
    return String.fromCharCode(code === 0x7f ? 0x2421 : 0x2400 + code);
  });
}
