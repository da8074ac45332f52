#!/usr/bin/env python3
"""Every relative link to a Markdown file resolves: the file exists and its #anchor is a heading
of that file, slugged the way GitHub slugs headings.

Usage: check_links.py SOURCE_DIR

Reads every *.md file under SOURCE_DIR (build trees, node_modules and .git left out), inline
links and reference definitions (`[name]: target`). Fenced code blocks are neither headings
nor links. A link with only an anchor (`](#x)`) is checked
against its own file; links with a scheme (https:, mailto:) and links to other kinds of
files are not checked. Prints one "not ok" line per broken link and exits 1 if there is one.
"""
import os
import re
import sys
import unicodedata

SKIP_DIRS = {".git", "node_modules", "build", "__pycache__"}
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)")   # [name]: target


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def heading_text(raw):
    """What GitHub slugs: the heading as rendered text (links by their text, no markup)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)   # [text](url) -> text
    text = re.sub(r"<[^>]+>", "", text)                     # inline HTML tags
    return text


def slug(raw):
    """GitHub's anchor for a heading: lower case, punctuation dropped except '-' and '_',
    each space a '-'. (Duplicates get -1, -2, … in anchors_of.)"""
    out = []
    for ch in heading_text(raw).strip().lower():
        if ch == " ":
            out.append("-")
        elif ch in "-_" or unicodedata.category(ch)[0] in "LN":
            out.append(ch)
    return "".join(out)


def anchors_of(text):
    anchors, seen = set(), {}
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchors.add(base if n == 0 else f"{base}-{n}")
    return anchors


def markdown_files(root):
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(directory, name)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    texts = {path: open(path, encoding="utf-8").read() for path in markdown_files(root)}
    anchor_cache = {}
    broken = checked = 0
    for path, text in texts.items():
        rel = os.path.relpath(path, root)
        for number, line in prose_lines(text):
            # inline code is not a link
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)) + REFERENCE.findall(line):
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                if file_part and not file_part.endswith(".md"):
                    continue
                target_path = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                checked += 1
                if not os.path.isfile(target_path):
                    print(f"not ok - {rel}:{number}: {target}: no such file")
                    broken += 1
                    continue
                if not anchor:
                    continue
                if target_path not in anchor_cache:
                    target_text = texts.get(target_path) or open(target_path, encoding="utf-8").read()
                    anchor_cache[target_path] = anchors_of(target_text)
                if anchor not in anchor_cache[target_path]:
                    print(f"not ok - {rel}:{number}: {target}: no heading with that anchor in "
                          f"{os.path.relpath(target_path, root)}")
                    broken += 1
    print(f"{'not ok' if broken else 'ok'} - {checked} links to Markdown files checked in "
          f"{len(texts)} files, {broken} broken")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
