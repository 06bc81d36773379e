"""Every link of the README and the docs/ pages resolves: relative links name a file of the
checkout, and a `#fragment` names a heading of the page it points to (GitHub's anchors)."""

import glob
import os
import re

import pytest

from tests.paths import ROOT
PAGES = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))),
         *sorted(glob.glob(os.path.join(ROOT, "examples", "*", "README.md")))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces -> '-'."""
    text = FENCE.sub("", open(path, encoding="utf-8").read())
    out = set()
    for heading in re.findall(r"^#+\s+(.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def links(path):
    text = FENCE.sub("", open(path, encoding="utf-8").read())
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    return LINK.findall(text)


def test_the_pages_exist():
    assert len(PAGES) >= 8, PAGES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue  # external: not checked offline
        path, _, fragment = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(resolved):
            broken.append(f"{target}: no file {os.path.relpath(resolved, ROOT)}")
        elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {os.path.relpath(resolved, ROOT)}")
    assert not broken, f"{os.path.relpath(page, ROOT)}: broken links:\n" + "\n".join(broken)


def test_the_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [bad](missing.md) [bad anchor](#nowhere)\n`[code](not/a/link)`\n")
    found = links(str(page))
    assert found == ["#title", "missing.md", "#nowhere"]
    assert "title" in anchors(str(page)) and "nowhere" not in anchors(str(page))
