#!/usr/bin/env python3
"""prepare-tokens.py - text files into llm.c's token shards for
clgrad-train --task gpt, with Hugging Face `tokenizers` (pip install
tokenizers==0.19.1; scripts/check-tokens.sh makes a venv with it). No network.

    prepare-tokens.py --out DIR (--tokenizer tokenizer.json | --train-bpe V) TEXT...
    prepare-tokens.py --tokenizer tokenizer.json --encode-prompt TEXT

TEXT is a file or a directory, whose regular files are read in byte order of
their names (symbolic links, such as fortunes' .u8 names, strfile's .dat
indexes and hidden files skipped, as clgrad-train's --data does), e.g.
/usr/share/games/fortunes. The text must be UTF-8.

A document is an entry of a fortune file: the lines between two lines that
hold only "%" (strfile's separator); a file without such a line is one
document. Empty documents are dropped. Each document is encoded alone, and
its tokens follow one end-of-text token ("<|endoftext|>", llm.c's
convention), so the stream is eot, doc 1, eot, doc 2, ...

The tokenizer: --tokenizer FILE, a byte-level BPE tokenizer.json the user
has (e.g. GPT-2's, downloaded by the user); or --train-bpe V, a byte-level
BPE of vocabulary V (>= 257: the 256 bytes and "<|endoftext|>", id 0)
trained on the given text, saved as DIR/tokenizer.json.

DIR gets:
  NAME_val_000000.bin    the last --val-fraction (default 0.1) of the
                         stream's tokens, floor(n x fraction), as
                         clgrad-train splits a text corpus (none at 0)
  NAME_train_000000.bin  the rest, in order; a new shard past every
                         --shard-tokens (default 100M) tokens, the val
                         split too (NAME_val_000001.bin, ...)
  tokenizer.bin          the decode table, llm.c's tokenizer format
                         (version 2): each token's bytes, a byte-level
                         token's characters mapped back through GPT-2's
                         bytes_to_unicode table, a special token's as its
                         UTF-8 text
Shards: a header of 256 little-endian int32 (20240520, 1, token count),
then the tokens as little-endian uint16. Train shards then val shards, read
in order, are the stream. The same inputs give the same bytes.

--encode-prompt TEXT prints the ids of eot then TEXT, comma-separated (for
clgrad-train's --prompt-tokens): a prompt starts as every document does.
"""
import argparse
import fractions
import json
import os
import re
import struct
import sys

SHARD_MAGIC = 20240520
SHARD_VERSION = 1
DECODE_MAGIC = 20240328
DECODE_VERSION = 2
HEADER_INTS = 256
VOCAB_MAX = 65535  # tokens are uint16; clgrad-train's GPT_TOKEN_VOCAB_MAX
EOT = "<|endoftext|>"
SHARD_TOKENS_MAX = 2**31 - 1  # the header's count is an int32


class Refusal(Exception):
    """An input the script refuses: printed as one line, exit status 2."""


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (openai/gpt-2
    encoder.py), which byte-level BPE tokens are spelled in."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def text_files(paths):
    """The files of the inputs, each directory's in byte order of names."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            listed = len(files)
            for name in sorted(os.listdir(p), key=os.fsencode):
                full = os.path.join(p, name)
                if name.startswith(".") or name.endswith(".dat") or os.path.islink(full) \
                        or not os.path.isfile(full):
                    continue
                files.append(full)
            if len(files) == listed:
                raise Refusal(f"{p}: no regular text file in it")
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise Refusal(f"{p}: no such file or directory (or not a regular file)")
    return files


def split_documents(data):
    """A file's bytes into its documents: the text between lines that are
    only "%" (each document keeps its own newlines), empty ones dropped."""
    docs, current = [], []
    lines = data.split(b"\n")  # lines end at "\n" alone: a "\r" is text
    for i, line in enumerate(lines):
        if line == b"%":
            docs.append(b"".join(current))
            current = []
        else:
            current.append(line + (b"\n" if i + 1 < len(lines) else b""))
    docs.append(b"".join(current))
    return [d for d in docs if d]


def read_documents(files):
    docs = []
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Refusal(f"{f}: not UTF-8 at byte offset {e.start}") from None
        docs.extend(d.decode("utf-8") for d in split_documents(data))
    if not docs:
        raise Refusal("the inputs hold no text")
    return docs


def tokenizers_module():
    try:
        import tokenizers
    except ImportError:
        raise Refusal("no Python module tokenizers: pip install tokenizers==0.19.1 (or run "
                      "scripts/check-tokens.sh, which makes a venv with it)") from None
    return tokenizers


def train_bpe(docs, vocab):
    tokenizers_module()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    if vocab > VOCAB_MAX:
        raise Refusal(f"--train-bpe {vocab}: more than {VOCAB_MAX} tokens, which uint16 "
                      "shards cannot hold")
    if vocab < 257:
        raise Refusal(f"--train-bpe {vocab}: fewer than 257 tokens (the 256 bytes and {EOT})")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(docs, trainer)
    return tok


def load_tokenizer(path):
    tokenizers = tokenizers_module()
    try:
        return tokenizers.Tokenizer.from_file(path)
    except Exception as e:  # tokenizers raises its own Exception type
        raise Refusal(f"--tokenizer {path}: cannot load it: {e}") from None


def check_vocab(tok, what):
    """The vocabulary size and the eot id, refused clearly when they do not
    fit uint16 shards or llm.c's table."""
    vocab = tok.get_vocab_size(with_added_tokens=True)
    if vocab > VOCAB_MAX:
        raise Refusal(f"{what}: {vocab} tokens, more than the {VOCAB_MAX} uint16 shards can "
                      "hold")
    eot = tok.token_to_id(EOT)
    if eot is None:
        raise Refusal(f"{what}: no {EOT} token (the end-of-text token before each document)")
    return vocab, eot


def token_bytes(tok, vocab, what):
    """Each token's bytes, in id order: only a tokenizer whose decoder is
    ByteLevel spells its tokens in bytes_to_unicode's characters."""
    decoder = (json.loads(tok.to_str()).get("decoder") or {}).get("type")
    if decoder != "ByteLevel":
        raise Refusal(f"{what}: its decoder is {decoder}, not ByteLevel: only byte-level "
                      "tokenizers (GPT-2's) decode to exact bytes")
    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    specials = {t.content for t in tok.get_added_tokens_decoder().values()}
    out = []
    for i in range(vocab):
        s = tok.id_to_token(i)
        if s is None:
            raise Refusal(f"{what}: no token has id {i} (the ids must be 0 .. {vocab - 1})")
        if s in specials:
            b = s.encode("utf-8")
        elif all(c in byte_of for c in s):
            b = bytes(byte_of[c] for c in s)
        else:
            raise Refusal(f"{what}: token {i} ({s!r}) is not byte-level BPE (GPT-2's "
                          "alphabet): only byte-level tokenizers decode to exact bytes")
        if len(b) > 255:
            raise Refusal(f"{what}: token {i} has {len(b)} bytes, more than the 255 of "
                          "llm.c's table")
        out.append(b)
    return out


def decode_table(tok, vocab, eot, what):
    header = struct.pack("<256I", DECODE_MAGIC, DECODE_VERSION, vocab, eot, *([0] * 252))
    body = b"".join(bytes([len(b)]) + b for b in token_bytes(tok, vocab, what))
    return header + body


def shard(tokens):
    header = struct.pack("<256i", SHARD_MAGIC, SHARD_VERSION, len(tokens), *([0] * 253))
    return header + struct.pack(f"<{len(tokens)}H", *tokens)


def write_file(path, data):
    """Written under a temporary name and renamed: never half a file."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def encode_stream(tok, docs, eot):
    stream = []
    for enc in tok.encode_batch(docs, add_special_tokens=False):
        stream.append(eot)
        stream.extend(enc.ids)
    return stream


def shard_names(name, split, n_tokens, per_shard):
    return [f"{name}_{split}_{k:06d}.bin" for k in range((n_tokens + per_shard - 1) // per_shard)]


def check_no_stale(out, name, written):
    """Refuses an output directory that holds a shard of this NAME that the
    run would not overwrite (of an earlier, longer run): the trainer would
    read it with the new ones."""
    if not os.path.isdir(out):
        return
    pattern = re.compile(re.escape(name) + r"_(train|val)_[0-9]{6}\.bin")
    stale = sorted(n for n in os.listdir(out) if pattern.fullmatch(n) and n not in written)
    if stale:
        raise Refusal(f"--out {out} already holds {stale[0]}, a shard this run does not write "
                      "(the trainer would read it with the new ones): remove it, or choose "
                      "another --out or --name")


def write_shards(out, names, tokens, per_shard):
    for k, name in enumerate(names):
        write_file(os.path.join(out, name), shard(tokens[k * per_shard:(k + 1) * per_shard]))


def fraction(text):
    f = fractions.Fraction(text)
    if not 0 <= f < 1:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1)")
    return f


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="text files or directories")
    p.add_argument("--out", help="the output directory (made if missing)")
    p.add_argument("--name", default="data", help="the shards' name prefix (default data)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokenizer", help="a byte-level BPE tokenizer.json")
    src.add_argument("--train-bpe", type=int, metavar="V",
                     help="train a byte-level BPE of V tokens on the inputs")
    p.add_argument("--val-fraction", type=fraction, default=fractions.Fraction(1, 10),
                   help="the last fraction of the tokens that validates (default 0.1)")
    p.add_argument("--shard-tokens", type=int, default=100_000_000,
                   help="tokens per shard at most (default 100000000)")
    p.add_argument("--encode-prompt", metavar="TEXT",
                   help="print the ids of eot then TEXT under --tokenizer, comma-separated")
    a = p.parse_args(argv)
    if a.encode_prompt is not None:
        if a.tokenizer is None:
            p.error("--encode-prompt needs --tokenizer")
    elif not a.inputs or not a.out:
        p.error("give text inputs and --out DIR (or --encode-prompt)")
    if not 1 <= a.shard_tokens <= SHARD_TOKENS_MAX:
        p.error(f"--shard-tokens {a.shard_tokens} is not in 1 .. {SHARD_TOKENS_MAX}")
    if "/" in a.name or not a.name:
        p.error(f"--name {a.name!r} must be a plain file name prefix")
    return a


def run(a):
    if a.encode_prompt is not None:
        tok = load_tokenizer(a.tokenizer)
        _, eot = check_vocab(tok, f"--tokenizer {a.tokenizer}")
        ids = [eot] + tok.encode(a.encode_prompt, add_special_tokens=False).ids
        print(",".join(map(str, ids)))
        return
    docs = read_documents(text_files(a.inputs))
    if a.train_bpe is not None:
        what = f"--train-bpe {a.train_bpe}"
        tok = train_bpe(docs, a.train_bpe)
    else:
        what = f"--tokenizer {a.tokenizer}"
        tok = load_tokenizer(a.tokenizer)
    vocab, eot = check_vocab(tok, what)
    table = decode_table(tok, vocab, eot, what)  # refuses before anything is written
    stream = encode_stream(tok, docs, eot)
    n_val = int(len(stream) * a.val_fraction)
    n_train = len(stream) - n_val
    train = shard_names(a.name, "train", n_train, a.shard_tokens)
    val = shard_names(a.name, "val", n_val, a.shard_tokens)
    check_no_stale(a.out, a.name, set(train + val))
    os.makedirs(a.out, exist_ok=True)
    if a.train_bpe is not None:
        write_file(os.path.join(a.out, "tokenizer.json"), tok.to_str().encode("utf-8"))
    write_file(os.path.join(a.out, "tokenizer.bin"), table)
    write_shards(a.out, train, stream[:n_train], a.shard_tokens)
    write_shards(a.out, val, stream[n_train:], a.shard_tokens)
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    print(f"prepare-tokens: {len(docs)} documents, {n_bytes} bytes -> {len(stream)} tokens "
          f"({len(stream) / n_bytes:.4f} tokens/byte, vocabulary {vocab}, eot {eot}): "
          f"{n_train} train in {len(train)} shard(s), {n_val} val in {len(val)}, in {a.out}")


def main(argv):
    try:
        run(parse_args(argv))
    except Refusal as e:
        print(f"prepare-tokens: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
