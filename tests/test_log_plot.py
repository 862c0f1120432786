#!/usr/bin/env python3
"""test_log_plot.py CLGRAD_TRAIN CLGRAD_PLOT VERSION - clgrad-train --log
(JSON Lines) and clgrad-plot, on real short runs (issue 35):

  gpt       --task gpt --preset tiny, 30 updates, with --metrics beside it:
            every line parses and has a type; the header's settings are
            the command line's, its device and tuning the --json's, its
            clgrad version the project's; one update line per update, 1 to
            30, whose loss, lr and gradient norm are the --metrics rows';
            eval lines, the last one's loss the --json val_loss; an end
            line; the weights bit-identical to a run without --log;
  classify  --train-limit/--test-limit on synthetic IDX files: samples,
            not tokens; an eval line per epoch ("test" loss and
            accuracy), the last one's the --json test_accuracy;
  refused   --log naming the --data file: exit 2, the corpus unchanged;
  failed    a run that stops on an error (its checkpoint's directory gone):
            the log's last line a "failed" end line with the run's error;
  kill      a run killed with SIGKILL once its log has >= 12 update lines:
            every line complete (ends with a newline, parses), no end line;
            resumed from its checkpoint with the same --log: a second
            header (resume, from_update the checkpoint's), the updates
            after it from from_update + 1 to the end, an end line;
  tail      the resumed run's log read while it grows: each update's line
            seen within 2 s of the update's end (its "time" stamp), and
            clgrad-plot draws the live log;
  plot      clgrad-plot of the gpt, classify and resumed logs: a PNG
            (signature, IHDR 960 x 540) with > 200 pixels of each of the
            training loss, evaluation loss and lr colours; a log cut
            inside its last line draws without a warning, a damaged line
            is skipped with one naming it.

Exits 77 (SKIP) when clgrad-train finds no OpenCL device."""
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from cli_run import check, failures

TRAIN, PLOT, VERSION = sys.argv[1:4]
TMP = tempfile.mkdtemp(prefix="log-plot-")
# the kernel cache meson gives every test (a cold one costs a minute on 2 cores)
ENV = dict(os.environ)
CORPUS = os.path.join(TMP, "corpus.txt")
GPT = ["--task", "gpt", "--preset", "tiny", "--data", CORPUS, "--quiet"]
# clgrad-plot's curve colours (tools/plot/clgrad-plot)
COLOURS = {"training loss": (0x1f, 0x77, 0xb4), "evaluation loss": (0xd6, 0x27, 0x28),
           "lr": (0x2c, 0xa0, 0x2c)}


def run(*args, expect=0):
    """clgrad-train with args, which must exit with expect (no device: exit 77)."""
    p = subprocess.run([TRAIN] + list(args), capture_output=True, text=True, env=ENV,
                       errors="replace")
    if p.returncode == expect:
        return p
    err = p.stderr.lower()
    if "opencl" in err and "device" in err:
        print("no OpenCL device: " + p.stderr.strip())
        sys.exit(77)
    raise AssertionError(f"clgrad-train {' '.join(args)}: exit {p.returncode}, not {expect}\n"
                         + p.stdout + p.stderr)


def run_json(*args):
    return json.loads(run(*args, "--json").stdout.strip().splitlines()[-1])


def write_corpus():
    """1.5 kB of sentences: about 7 updates of 8 windows an epoch, so that 30
    updates evaluate several times."""
    rnd = random.Random(1)
    words = [["the cat", "a dog", "my friend", "the old man", "every child"],
             ["sees", "likes", "finds", "paints"], ["the moon", "a red ball", "the sea"]]
    text = ""
    while len(text) < 1500:
        text += " ".join(rnd.choice(w) for w in words) + ".\n"
    with open(CORPUS, "w") as f:
        f.write(text)


def write_idx(d, prefix, n, seed):
    """n 28 x 28 images of 10 classes, each class a bright band of rows."""
    rnd = random.Random(seed)
    labels = bytes(rnd.randrange(10) for _ in range(n))
    images = bytearray()
    for lab in labels:
        for r in range(28):
            band = 2 * lab <= r < 2 * lab + 6
            images += bytes(min(255, (200 if band else 20) + rnd.randrange(40))
                            for _ in range(28))
    with open(os.path.join(d, prefix + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + images)
    with open(os.path.join(d, prefix + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels)


def read_log(path):
    """The log's lines as objects, and whether each one ended with a newline
    and parsed."""
    with open(path, "rb") as f:
        data = f.read()
    lines, complete = [], data.endswith(b"\n")
    for raw in data.split(b"\n")[:-1] if complete else data.split(b"\n"):
        try:
            obj = json.loads(raw)
        except ValueError:
            complete = False
            continue
        complete = complete and isinstance(obj, dict) and "type" in obj
        lines.append(obj)
    return lines, complete


def of_type(lines, kind):
    return [l for l in lines if l.get("type") == kind]


def check_updates(what, updates, first, last):
    nums = [u["update"] for u in updates]
    check(nums == list(range(first, last + 1)),
          f"{what}: one update line per update, {first} to {last} (got {nums[:3]}..{nums[-3:]})")


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def test_gpt():
    log, csv = os.path.join(TMP, "gpt.jsonl"), os.path.join(TMP, "gpt.csv")
    args = GPT + ["--steps", "30", "--lr", "0.003", "--batch", "8", "--micro-batch", "4"]
    j = run_json(*args, "--log", log, "--metrics", csv,
                 "--dump-weights", os.path.join(TMP, "w-log.bin"))
    lines, complete = read_log(log)
    check(complete and all("type" in l for l in lines), "gpt: every line complete, with a type")
    h = lines[0]
    s, ts = h.get("settings", {}), h.get("task_settings", {})
    check(h.get("type") == "header" and h.get("task") == "gpt" and h.get("resume") is None
          and h.get("from_update") == 0, "gpt: the first line is a fresh run's header")
    check(h.get("clgrad") == VERSION, f"gpt: header clgrad {h.get('clgrad')} == {VERSION}")
    check(h.get("device") == j["device"] and h.get("device"),
          f"gpt: header device {h.get('device')!r} is the run's")
    tuning = h.get("tuning", {})
    check(tuning.get("flag") == "auto" and (tuning.get("file") or "") == j["clblast_tuning"],
          f"gpt: header tuning {tuning} is the run's ({j['clblast_tuning']!r})")
    want = {"optimizer": "adamw", "lr": "0.003", "batch": "8", "micro-batch": "4",
            "steps": "30", "grad-dtype": "fp32", "state-dtype": "fp32", "master-dtype": "fp32"}
    check(all(s.get(k) == v for k, v in want.items()), f"gpt: header settings {want}")
    check(ts.get("layers") == "2" and ts.get("width") == "32" and ts.get("context") == "24",
          "gpt: header task settings (tiny: 2 layers, 32 wide, context 24)")
    check(h.get("k") == 2 and h.get("micro_batch") == 4 and h.get("total_updates") == 30
          and h.get("unit") == "tokens", "gpt: header k 2, micro-batch 4, 30 updates, tokens")
    updates = of_type(lines, "update")
    check_updates("gpt", updates, 1, 30)
    check(all(u["tokens"] == 24 * u["samples"] and "tokens_per_s" in u for u in updates),
          "gpt: update lines count tokens (24 a window)")
    with open(csv) as f:
        rows = [r.split(",") for r in f.read().split("\n")[1:] if r]
    same = len(rows) == len(updates) and all(
        [int(r[0]), int(r[1]), int(r[2]), int(r[3])] ==
        [u["update"], u["micro_steps"], u["samples"], u["epoch"]]
        and close(float(r[4]), u["loss"], 1e-5)
        and close(float(r[5]), u["lr"], 1e-5) and close(float(r[6]), u["grad_norm"], 1e-5)
        and int(r[8]) == u["skipped"] for r, u in zip(rows, updates))
    check(same, "gpt: each update's counters, loss, lr, grad norm and skipped are the "
          "--metrics row's")
    evals = of_type(lines, "eval")
    check(len(evals) >= 3 and all(e["split"] == "validation" for e in evals),
          f"gpt: {len(evals)} validation eval lines (>= 3)")
    check(evals and close(evals[-1]["loss"], j["val_loss"], 1e-12),
          "gpt: the last eval's loss is the --json val_loss")
    end = lines[-1]
    check(end.get("type") == "end" and end.get("status") == "done" and end.get("update") == 30,
          "gpt: the last line ends the run (done, 30 updates)")
    run(*args, "--dump-weights", os.path.join(TMP, "w-plain.bin"))
    with open(os.path.join(TMP, "w-log.bin"), "rb") as a, \
            open(os.path.join(TMP, "w-plain.bin"), "rb") as b:
        check(a.read() == b.read(), "gpt: --log changes no weight (bit-identical)")
    return log


def test_classify():
    d = os.path.join(TMP, "idx")
    os.mkdir(d)
    write_idx(d, "train", 600, 1)
    write_idx(d, "t10k", 200, 2)
    log = os.path.join(TMP, "classify.jsonl")
    j = run_json("--data", d, "--train-limit", "512", "--test-limit", "128", "--batch", "64",
                 "--micro-batch", "32", "--epochs", "3", "--hidden", "32", "--quiet",
                 "--log", log)
    lines, complete = read_log(log)
    check(complete, "classify: every line complete")
    h = lines[0]
    check(h.get("type") == "header" and h.get("task") == "classify" and
          h.get("unit") == "samples" and h.get("settings", {}).get("train-limit") == "512",
          "classify: header (task classify, unit samples, train-limit 512)")
    updates = of_type(lines, "update")
    check_updates("classify", updates, 1, 24)
    check(all("tokens" not in u and u["samples"] == 64 * u["update"] and "samples_per_s" in u
              for u in updates), "classify: update lines count samples, no tokens")
    evals = of_type(lines, "eval")
    check([e["update"] for e in evals] == [8, 16, 24] and
          all(e["split"] == "test" and 0 <= e["accuracy"] <= 1 for e in evals),
          "classify: an eval line per epoch (test loss and accuracy)")
    check(evals and close(evals[-1]["accuracy"], j["test_accuracy"], 1e-12) and
          close(evals[-1]["loss"], j["test_loss"], 1e-12),
          "classify: the last eval is the --json test accuracy and loss")
    return log


def test_refused():
    with open(CORPUS, "rb") as f:
        before = f.read()
    p = run(*GPT, "--steps", "1", "--log", CORPUS, expect=2)
    with open(CORPUS, "rb") as f:
        after = f.read()
    check(f"--log {CORPUS} and --data {CORPUS} name the same file" in p.stderr
          and before == after, "refused: --log naming the --data file, the corpus unchanged")


def follow(log, proc, on_line, until, seen=0):
    """Reads log from byte seen on while proc runs: on_line(obj, time it
    arrived) for each new complete line; until(lines so far) stops early.
    Returns the lines."""
    buf, lines = b"", []
    while True:
        alive = proc.poll() is None
        try:
            with open(log, "rb") as f:
                f.seek(seen)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        now = time.time()
        seen += len(chunk)
        buf += chunk
        while b"\n" in buf:
            raw, buf = buf.split(b"\n", 1)
            obj = json.loads(raw)
            lines.append(obj)
            on_line(obj, now)
        if not alive or until(lines):
            return lines
        time.sleep(0.01)


def watch_resumed(args, log):
    """The resumed run, its log read as it grows (tail -f): each update's
    line seen within 2 s of the update's end (its "time" stamp), and
    clgrad-plot drawing the live log mid-run."""
    png = os.path.join(TMP, "live.png")
    proc = subprocess.Popen([TRAIN] + args, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    late, drawn = [], []

    def on_line(obj, arrived):
        if obj["type"] != "update":
            return
        late.append(arrived - obj["time"])
        if obj["update"] == 100:
            drawn.append(subprocess.run([PLOT, log, "-o", png], capture_output=True,
                                        text=True).returncode)

    with open(log, "rb") as f:
        start = len(f.read())
    follow(log, proc, on_line, lambda lines: False, start)
    proc.wait()
    check(proc.returncode == 0 and len(late) >= 280, f"tail: {len(late)} update lines seen "
          "as they came (>= 280)")
    late.sort()
    if late:
        print(f"     a line after its update's end: median {late[len(late) // 2] * 1e3:.1f} ms, "
              f"max {late[-1] * 1e3:.1f} ms")
    check(late and late[-1] < 2.0, "tail: every update's line within 2 s of its end")
    check(drawn == [0] and png_curves(png, "live"), "tail: clgrad-plot draws the live log")


def test_failed():
    """A run that stops on an error: its --save-every checkpoint's directory
    removed once the log has its header."""
    d, log = os.path.join(TMP, "gone"), os.path.join(TMP, "failed.jsonl")
    os.mkdir(d)
    proc = subprocess.Popen([TRAIN] + GPT + ["--steps", "300", "--log", log, "--checkpoint",
                            os.path.join(d, "c.st"), "--save-every", "100"], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    follow(log, proc, lambda o, t: None, lambda lines: len(lines) > 0)
    shutil.rmtree(d)
    err = proc.communicate()[1]
    lines, complete = read_log(log)
    end = lines[-1] if lines else {}
    check(proc.returncode == 1 and complete and end.get("type") == "end" and
          end.get("status") == "failed" and end.get("update") == 100 and
          end.get("error") and end["error"] in err,
          f"failed: the log ends with a failed end line at update 100, the run's error "
          f"({end.get('error', '')[:60]}...)")


def test_kill():
    log, ck = os.path.join(TMP, "kill.jsonl"), os.path.join(TMP, "kill.st")
    args = GPT + ["--steps", "300", "--log", log, "--checkpoint", ck, "--save-every", "4"]
    proc = subprocess.Popen([TRAIN] + args, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    lines = follow(log, proc, lambda o, t: None,
                   lambda ls: len(of_type(ls, "update")) >= 12 or time.monotonic() - t0 > 60)
    alive = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    check(alive and len(of_type(lines, "update")) >= 12 and not of_type(lines, "end"),
          f"kill: SIGKILL mid-run, {len(of_type(lines, 'update'))} update lines (>= 12) and no "
          "end line in the log")
    lines, complete = read_log(log)
    last = of_type(lines, "update")[-1]["update"] if of_type(lines, "update") else 0
    check(complete and not of_type(lines, "end"), f"kill: after SIGKILL at update {last} every "
          "line is complete, and there is no end line")
    watch_resumed(args + ["--resume", ck], log)
    lines, complete = read_log(log)
    heads = of_type(lines, "header")
    check(complete and len(heads) == 2, "kill: resumed: the log appended to, a second header")
    at = heads[-1].get("from_update", -1) if heads else -1
    check(heads[-1].get("resume") == ck and at % 4 == 0 and 4 <= at <= last,
          f"kill: the header resumes {ck} from update {at} (a checkpoint, <= {last})")
    after = lines[lines.index(heads[-1]) + 1:]
    check_updates("kill: resumed", of_type(after, "update"), at + 1, 300)
    check(lines[-1].get("type") == "end" and lines[-1].get("status") == "done",
          "kill: resumed: an end line")
    return log


def png_pixels(path):
    """(width, height, [(r, g, b), ...]) of an 8-bit RGB, RGBA or palette PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, idat, palette, ihdr = 8, b"", b"", None
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = body
        elif kind == b"IDAT":
            idat += body
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or interlace or ctype not in (2, 3, 6):
        return w, h, []
    bpp = {2: 3, 3: 1, 6: 4}[ctype]
    raw, stride, prev, pixels = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if ctype == 3:
            pixels += [tuple(palette[3 * i:3 * i + 3]) for i in line]
        else:
            pixels += [tuple(line[i:i + 3]) for i in range(0, stride, bpp)]
        prev = line
    return w, h, pixels


def png_curves(png, what):
    got = png_pixels(png) if os.path.exists(png) else None
    check(got is not None and got[:2] == (960, 540), f"plot {what}: a 960 x 540 PNG")
    if not got:
        return False
    counts = {name: sum(1 for p in got[2] if p == rgb) for name, rgb in COLOURS.items()}
    check(all(n > 200 for n in counts.values()), f"plot {what}: pixels of each curve {counts}")
    return all(n > 200 for n in counts.values())


def plot(log, png, what):
    p = subprocess.run([PLOT, log, "-o", png], capture_output=True, text=True)
    check(p.returncode == 0 and not p.stderr, f"plot {what}: clgrad-plot exit 0, nothing on "
          f"stderr ({p.stderr.strip()[-200:]})")
    return png_curves(png, what)


def test_plot(gpt_log, classify_log, resumed_log):
    plot(gpt_log, os.path.join(TMP, "gpt.png"), "gpt")
    plot(classify_log, os.path.join(TMP, "classify.png"), "classify")
    plot(resumed_log, os.path.join(TMP, "resumed.png"), "resumed")
    with open(gpt_log, "rb") as f:
        data = f.read()
    cut = os.path.join(TMP, "cut.jsonl")
    with open(cut, "wb") as f:
        f.write(data[:len(data) - 40])  # inside the end line, as if it were being written
    plot(cut, os.path.join(TMP, "cut.png"), "a log cut inside its last line")
    lines = data.split(b"\n")
    lines[5] = b'{"type": "upd'
    bad = os.path.join(TMP, "bad.jsonl")
    with open(bad, "wb") as f:
        f.write(b"\n".join(lines))
    p = subprocess.run([PLOT, bad, "-o", os.path.join(TMP, "bad.png")], capture_output=True,
                       text=True)
    check(p.returncode == 0 and f"{bad}:6: not a line of a clgrad-train --log, skipped"
          in p.stderr, "plot: a damaged line skipped with a warning naming it")


def main():
    write_corpus()
    gpt_log = test_gpt()
    classify_log = test_classify()
    test_refused()
    test_failed()
    resumed_log = test_kill()
    test_plot(gpt_log, classify_log, resumed_log)
    if failures:
        print("%d failed: %s (files in %s)" % (len(failures), "; ".join(failures), TMP))
        sys.exit(1)
    shutil.rmtree(TMP)
    print("all passed")


if __name__ == "__main__":
    main()
