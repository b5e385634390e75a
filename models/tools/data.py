"""tinyshakespeare as byte tokens, and the random windows that training and the measurements
draw from it. The last 10% of the corpus is held out: never trained on, and what every alpha,
validation loss and copy accuracy is measured on. Standard library at import (torch only in the
functions that make tensors), so that measure_alpha.py and measure_repetition.py, which drive
the native CLI, start without torch."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
CORPUS = os.path.join(ROOT, '..', 'shared', 'data', 'tinyshakespeare.txt')


def read_corpus():
    with open(CORPUS, 'rb') as f:
        return f.read()


def split_at(data):
    """Where the held-out part starts: the last 10% of the corpus."""
    return int(0.9 * len(data))


def held_out_windows(length, n=16):
    """n windows of held-out text (bytes), length bytes each, starting evenly spaced: the prompts
    of the real-decoding measurements."""
    data = read_corpus()
    val = data[split_at(data):]
    return [val[i * len(val) // n:][:length] for i in range(n)]


def load_data():
    """-> (train, val): 1-D long tensors of byte values."""
    import torch
    data = torch.tensor(list(read_corpus()), dtype=torch.long)
    n = split_at(data)
    return data[:n], data[n:]  # last 10% held out


def get_batch(data, batch, block, gen, copy_frac=0.0, copy_style='repeat'):
    """batch windows of block + 1 bytes (inputs x, next bytes y; both (batch, block)). With
    copy_frac > 0 that share of the windows repeats earlier text of the same window, so that the
    model learns to copy, as language models do and prompt lookup relies on (tinyshakespeare
    itself rarely repeats a span of more than a few words):
      'repeat': a passage of m bytes (m in [block/4, block/2]) followed by itself again and again;
      'quote':  a passage of m bytes (m in [block/4, 3 block/4]) followed by the text that starts
                at a random point a of it (a < m/2): the window quotes the passage's tail from a,
                then goes on past it with the corpus' own continuation (new text, where copying
                stops paying). The copy starts anywhere, so only attending to where the current
                bytes occurred before (an induction head) predicts it;
      'mix':    either, with equal odds."""
    import torch
    ix = torch.randint(len(data) - block - 1, (batch,), generator=gen)
    rows = []
    for i in ix.tolist():
        if copy_frac > 0 and torch.rand((), generator=gen).item() < copy_frac:
            style = copy_style
            if style == 'mix':  # half and half
                style = 'quote' if torch.rand((), generator=gen).item() < 0.5 else 'repeat'
            if style == 'quote':
                m = int(torch.randint(block // 4, 3 * block // 4 + 1, (), generator=gen))
                a = int(torch.randint(0, m // 2, (), generator=gen))
                rows.append(torch.cat([data[i:i + m], data[i + a:i + a + block + 1 - m]]))
            else:
                m = int(torch.randint(block // 4, block // 2 + 1, (), generator=gen))
                span = data[i:i + m]
                reps = (block + 1 + m - 1) // m
                rows.append(span.repeat(reps)[:block + 1])
        else:
            rows.append(data[i:i + block + 1])
    w = torch.stack(rows)  # (batch, block + 1)
    return w[:, :-1], w[:, 1:]
