#!/usr/bin/env python3
"""check-readme.py - the README stays user documentation, and the pages it
sends readers to stay reachable. Exits 1 naming each problem:

- README.md is longer than MAX_LINES (the reference material lives in
  docs/ and bench/results/, not in the README);
- the README's first code block lost one of the two commands that CI and
  new users run;
- a relative link or image of README.md, docs/*.md or bench/results/*.md
  names a file that does not exist, or an anchor (#...) that no heading of
  the target Markdown file makes;
- a stale statement is back (STALE: text that was true once and is not now).

usage: check-readme.py SOURCE_ROOT"""
import glob
import os
import re
import sys

MAX_LINES = 300
COMMANDS = ("sh scripts/install-deps.sh && make run",
            "sh scripts/install-deps.sh && make test")
# (file, how many of its first lines, phrase): the phrase must not appear
# there. clgrad-train has three tasks (classify, contrastive, gpt).
STALE = (
    ("README.md", None, "the two tasks"),
    ("docs/design.md", None, "the two tasks"),
    ("docs/train.md", None, "the two tasks"),
    ("tools/train/main.c", 5, "trains an MLP on Fashion-MNIST"),
)
# The clients' kernel files left cl/ for the trainer's folders and bench/cl/.
STALE += tuple((page, None, "`cl/" + name)
               for page in ("README.md", "docs/design.md", "docs/testing.md", "docs/train.md",
                            "bench/README.md")
               for name in ("mlp.cl", "contrastive_train.cl", "gpt.cl", "gpt_rows.cl",
                            "stream.cl", "handrolled.cl"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            yield number, line


def anchors(path):
    """The anchors GitHub makes for a Markdown file's headings (lower case,
    punctuation but '-' and '_' dropped, spaces to '-', '-N' on repeats),
    and those of explicit <a id|name="...">."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found, seen = set(), {}
    for _, line in prose_lines(text):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
            slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else "%s-%d" % (slug, n))
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return found


def link_problems(root, page):
    with open(os.path.join(root, page), encoding="utf-8") as f:
        text = f.read()
    problems = []
    for number, line in prose_lines(text):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if SCHEME.match(target) or target.startswith("/"):
                continue
            path, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(root, os.path.dirname(page), path)) \
                if path else os.path.join(root, page)
            if not os.path.exists(where):
                problems.append("%s:%d: link to %s: no such file" % (page, number, target))
            elif anchor and where.endswith(".md") and anchor not in anchors(where):
                problems.append("%s:%d: link to %s: %s has no heading for #%s"
                                % (page, number, target, os.path.relpath(where, root), anchor))
    return problems


def readme_problems(root):
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        text = f.read()
    problems = []
    lines = text.count("\n")
    if lines > MAX_LINES:
        problems.append("README.md: %d lines, more than %d (reference material goes to docs/, "
                        "measurements to bench/results/)" % (lines, MAX_LINES))
    block = re.search(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    for command in COMMANDS:
        if not block or command not in block.group(1):
            problems.append("README.md: the first code block lost the command '%s'" % command)
    return problems


def stale_problems(root):
    problems = []
    for page, first, phrase in STALE:
        path = os.path.join(root, page)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = "\n".join(f.read().splitlines()[:first])
        # A phrase may be broken across lines of prose.
        pattern = r"\s+".join(map(re.escape, phrase.split()))
        for m in re.finditer(pattern, text, re.I):
            problems.append("%s:%d: stale: '%s'" % (page, text.count("\n", 0, m.start()) + 1,
                                                   phrase))
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("usage: ")[1])
    root = sys.argv[1]
    pages = ["README.md"] + sorted(
        os.path.relpath(p, root) for pattern in ("docs/*.md", "bench/results/*.md")
        for p in glob.glob(os.path.join(root, pattern)))
    problems = readme_problems(root) + stale_problems(root)
    for page in pages:
        problems += link_problems(root, page)
    for p in problems:
        print("check-readme: " + p)
    if not problems:
        print("check-readme: README.md within %d lines, its commands there, the links of %d "
              "pages resolve, nothing stale" % (MAX_LINES, len(pages)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
