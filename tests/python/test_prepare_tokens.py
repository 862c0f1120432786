#!/usr/bin/env python3
"""test_prepare_tokens.py - scripts/prepare-tokens.py on the fortunes corpus,
offline: a 4096-token byte-level BPE trained on it, the shards' headers and
counts, the 90/10 split, every document back to its exact bytes through
tokenizers and through tokenizer.bin (parsed here from llm.c's format, not
with the script's code), the same bytes from a second run, more shards past
--shard-tokens, --tokenizer with the trained tokenizer.json, --encode-prompt,
and the refusals (a vocabulary past uint16, text that is not UTF-8, a stale
shard). Prints tokens/byte and the script's time.

Run by scripts/check-tokens.sh (a venv with tokenizers==0.19.1):
    test_prepare_tokens.py [--corpus /usr/share/games/fortunes]
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from tokenizers import Tokenizer, models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "prepare-tokens.py")
ARGS = None
VOCAB = 4096


def prepare(*args, check=True):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"prepare-tokens.py {' '.join(args)} failed: {r.stderr}")
    return r


def read_shard(path):
    """(header ints, tokens) of an llm.c shard, checked against its size."""
    with open(path, "rb") as f:
        raw = f.read()
    header = struct.unpack("<256i", raw[:1024])
    assert header[0] == 20240520, path
    assert header[1] == 1, path
    assert len(raw) == 1024 + 2 * header[2], (path, header[2], len(raw))
    assert all(v == 0 for v in header[3:]), path
    return header, list(struct.unpack(f"<{header[2]}H", raw[1024:]))


def read_table(path):
    """(vocab, eot, [bytes of each token]) of llm.c's tokenizer file v2."""
    with open(path, "rb") as f:
        raw = f.read()
    magic, version, vocab, eot = struct.unpack("<4I", raw[:16])
    assert (magic, version) == (20240328, 2)
    assert all(v == 0 for v in struct.unpack("<252I", raw[16:1024]))
    tokens, at = [], 1024
    for _ in range(vocab):
        n = raw[at]
        tokens.append(raw[at + 1:at + 1 + n])
        at += 1 + n
    assert at == len(raw), "trailing bytes"
    return vocab, eot, tokens


def corpus_documents(corpus):
    """The documents of the corpus by the rule the script documents: each
    file of the directory (no link, no .dat, no hidden file), in byte order
    of names, cut at the lines that are only "%", empty pieces dropped."""
    docs = []
    for name in sorted(os.listdir(corpus), key=os.fsencode):
        path = os.path.join(corpus, name)
        if name.startswith(".") or name.endswith(".dat") or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            pieces = re.split(rb"(?m)^%(?:\n|\Z)", f.read())
        docs.extend(p for p in pieces if p)
    return docs


def stream_of(out, name="fortunes"):
    names = sorted(os.listdir(out))
    train = [n for n in names if n.startswith(f"{name}_train_")]
    val = [n for n in names if n.startswith(f"{name}_val_")]
    tokens = []
    for n in train + val:
        tokens += read_shard(os.path.join(out, n))[1]
    n_val = sum(read_shard(os.path.join(out, n))[0][2] for n in val)
    return tokens, train, val, n_val


class PrepareTokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.a = os.path.join(cls.tmp.name, "a")
        cls.b = os.path.join(cls.tmp.name, "b")
        start = time.perf_counter()
        prepare("--out", cls.a, "--name", "fortunes", "--train-bpe", str(VOCAB), ARGS.corpus)
        cls.seconds = time.perf_counter() - start
        prepare("--out", cls.b, "--name", "fortunes", "--train-bpe", str(VOCAB), ARGS.corpus)
        cls.docs = corpus_documents(ARGS.corpus)
        cls.stream, cls.train, cls.val, cls.n_val = stream_of(cls.a)
        cls.vocab, cls.eot, cls.table = read_table(os.path.join(cls.a, "tokenizer.bin"))
        cls.tok = Tokenizer.from_file(os.path.join(cls.a, "tokenizer.json"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_files_and_split(self):
        self.assertEqual(self.train, ["fortunes_train_000000.bin"])
        self.assertEqual(self.val, ["fortunes_val_000000.bin"])
        self.assertEqual(self.vocab, VOCAB)
        self.assertEqual(self.tok.get_vocab_size(), VOCAB)
        self.assertEqual(self.eot, self.tok.token_to_id("<|endoftext|>"))
        # the last floor(n / 10) tokens validate
        self.assertEqual(self.n_val, len(self.stream) // 10)
        self.assertTrue(all(t < VOCAB for t in self.stream))
        # every byte is a token of its own (byte-level BPE)
        self.assertEqual({t[0] for t in self.table if len(t) == 1}, set(range(256)))

    def test_round_trip(self):
        # the stream: eot before each document, nothing else
        self.assertEqual(self.stream[0], self.eot)
        docs_ids, cur = [], None
        for t in self.stream:
            if t == self.eot:
                cur = []
                docs_ids.append(cur)
            else:
                cur.append(t)
        self.assertEqual(len(docs_ids), len(self.docs))
        for ids, doc in zip(docs_ids, self.docs):
            self.assertEqual(b"".join(self.table[t] for t in ids), doc)
            self.assertEqual(self.tok.decode(ids).encode("utf-8"), doc)
            self.assertEqual(self.tok.encode(doc.decode("utf-8")).ids, ids)
        n_bytes = sum(map(len, self.docs))
        print(f"\n  {len(self.docs)} documents, {n_bytes} bytes, {len(self.stream)} tokens: "
              f"{len(self.stream) / n_bytes:.4f} tokens/byte "
              f"({(len(self.stream) - len(self.docs)) / n_bytes:.4f} without the eot tokens); "
              f"prepare-tokens.py --train-bpe {VOCAB}: {self.seconds:.2f} s")

    def test_deterministic(self):
        names = sorted(os.listdir(self.a))
        self.assertEqual(names, sorted(os.listdir(self.b)))
        for n in names:
            with open(os.path.join(self.a, n), "rb") as fa, open(os.path.join(self.b, n),
                                                                  "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), n)

    def test_tokenizer_and_shard_tokens(self):
        out = os.path.join(self.tmp.name, "c")
        prepare("--out", out, "--name", "fortunes", "--tokenizer",
                os.path.join(self.a, "tokenizer.json"), "--shard-tokens", "100000",
                ARGS.corpus)
        stream, train, val, n_val = stream_of(out)
        # (assertEqual's diff of two 860k-token lists would take minutes)
        self.assertEqual(len(stream), len(self.stream))
        self.assertTrue(stream == self.stream, "another stream than the first run's")
        self.assertEqual(len(train), -(-(len(stream) - n_val) // 100000))
        self.assertEqual(train[-1], f"fortunes_train_{len(train) - 1:06d}.bin")
        for n in train[:-1]:
            self.assertEqual(read_shard(os.path.join(out, n))[0][2], 100000)
        self.assertFalse(os.path.exists(os.path.join(out, "tokenizer.json")))
        with open(os.path.join(out, "tokenizer.bin"), "rb") as f, \
                open(os.path.join(self.a, "tokenizer.bin"), "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_encode_prompt(self):
        prompt = "Naïve café 🚀: the end"
        r = prepare("--tokenizer", os.path.join(self.a, "tokenizer.json"),
                    "--encode-prompt", prompt)
        ids = [int(x) for x in r.stdout.strip().split(",")]
        self.assertEqual(ids[0], self.eot)
        self.assertEqual(b"".join(self.table[t] for t in ids[1:]), prompt.encode("utf-8"))

    def test_refusals(self):
        out = os.path.join(self.tmp.name, "refused")
        r = prepare("--out", out, "--train-bpe", "70000", ARGS.corpus, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("65535", r.stderr)
        # a tokenizer.json of 70001 tokens
        big = os.path.join(self.tmp.name, "big.json")
        vocab = {f"w{i}": i for i in range(70000)}
        vocab["<|endoftext|>"] = 70000
        Tokenizer(models.WordLevel(vocab, unk_token="w0")).save(big)
        r = prepare("--out", out, "--tokenizer", big, ARGS.corpus, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("70001 tokens, more than the 65535", r.stderr)
        # not byte-level: refused before anything is written
        small = os.path.join(self.tmp.name, "small.json")
        Tokenizer(models.WordLevel({"<|endoftext|>": 0, "hello": 1}, unk_token="hello")) \
            .save(small)
        r = prepare("--out", out, "--tokenizer", small, ARGS.corpus, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("decoder is None, not ByteLevel", r.stderr)
        # Latin-1 text
        latin = os.path.join(self.tmp.name, "latin1.txt")
        with open(latin, "wb") as f:
            f.write(b"caf\xe9\n")
        r = prepare("--out", out, "--train-bpe", "300", latin, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not UTF-8 at byte offset 3", r.stderr)
        self.assertFalse(os.path.exists(out))
        # a shard of an earlier, longer run that this one would not overwrite
        stale = os.path.join(self.tmp.name, "stale")
        os.makedirs(stale)
        open(os.path.join(stale, "data_train_000001.bin"), "wb").close()
        r = prepare("--out", stale, "--train-bpe", "300", latin.replace("latin1", "x"),
                    check=False)
        self.assertEqual(r.returncode, 2)  # no such input
        text = os.path.join(self.tmp.name, "ok.txt")
        with open(text, "w") as f:
            f.write("hello\n")
        r = prepare("--out", stale, "--train-bpe", "300", text, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("data_train_000001.bin", r.stderr)
        self.assertEqual(os.listdir(stale), ["data_train_000001.bin"])


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default="/usr/share/games/fortunes")
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
