"""The README's code blocks, read from README.md itself, so that the tests run them as written
(tests/test_readme.py on the CPU, tests/gpu/test_readme_gpu.py on a GPU). The tests load this
file by path (they are not a package)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(language: str, section: str | None = None) -> list[str]:
    """The ```language blocks of the README, in order; with ``section``, those under the ``## ``
    heading of that title only."""
    text = README.read_text()
    if section is not None:
        start = text.index(f"\n## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start : end if end >= 0 else len(text)]
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def commands(section: str) -> list[str]:
    """The shell commands of a section's bash blocks: one per line, comments dropped; a block whose
    first line is a comment naming the GPU is left out (it needs one)."""
    out = []
    for block in blocks("bash", section):
        if block.lstrip().startswith("# GPU"):
            continue
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out
