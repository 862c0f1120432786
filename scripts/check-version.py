#!/usr/bin/env python3
"""check-version.py - one version everywhere: the project's, in meson.build,
is the Python package's (python/meson.build and python/pyproject.toml; the
meson that Debian 12 ships, 1.0, cannot read a version from a file, so the
copies are checked rather than generated), and the license is one too
(meson.build's, LICENSE's first line, the package's). Exits 1 naming each
file that drifted.

usage: check-version.py SOURCE_ROOT"""
import os
import re
import sys


def field(path, pattern):
    with open(path) as f:
        m = re.search(pattern, f.read(), re.M)
    return m.group(1) if m else None


def main():
    root = sys.argv[1]
    p = lambda *a: os.path.join(root, *a)  # noqa: E731
    version = field(p("meson.build"), r"^\s*version:\s*'([^']+)'")
    license_ = field(p("meson.build"), r"^\s*license:\s*'([^']+)'")
    found = {
        "python/meson.build version": field(p("python", "meson.build"),
                                            r"^\s*version:\s*'([^']+)'"),
        "python/pyproject.toml version": field(p("python", "pyproject.toml"),
                                               r'^version\s*=\s*"([^"]+)"'),
    }
    bad = [f"{k} is {v}, meson.build's is {version}" for k, v in found.items() if v != version]
    licenses = {
        "LICENSE": field(p("LICENSE"), r"\A(\S+) License"),
        "python/pyproject.toml license": field(p("python", "pyproject.toml"),
                                               r'^license\s*=\s*\{text\s*=\s*"([^"]+)"'),
    }
    bad += [f"{k} is {v}, meson.build's is {license_}" for k, v in licenses.items()
            if v != license_]
    for b in bad:
        print("check-version: " + b)
    if not bad:
        print(f"check-version: {version}, {license_}, everywhere")
    return 1 if bad or not version else 0


if __name__ == "__main__":
    sys.exit(main())
