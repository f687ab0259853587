"""The documentation states the present, briefly, and cites what exists: its pages stay within
their lengths, every file of benchmarks/results/ is cited by the results table or a page, every
results file and benchmark module a page names exists, and no page narrates runs."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGES = [
    ROOT / "README.md",
    ROOT / "data" / "README.md",
    ROOT / "benchmarks" / "README.md",
    ROOT / "benchmarks" / "studies" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
# a results file as the pages cite it: NAME_<gpu or cpu>[...].<suffix>, in backticks or a path
RESULTS_NAME = re.compile(r"\b[A-Za-z0-9][\w.-]*_(?:h100|h200|cpu)[\w.-]*\.(?:json|log|txt|png)\b")
# phrases that tell how the project came to be rather than what it is
NARRATIVE = re.compile(r"\brun \d+\b|no longer|shipped before|the model before|earlier runs?\b|used to\b", re.I)


def _text() -> str:
    return "\n".join(page.read_text() for page in PAGES)


@pytest.mark.parametrize(("page", "most"), [("README.md", 200), ("data/README.md", 200), ("docs/results.md", 150)])
def test_pages_stay_within_their_length(page, most):
    assert len((ROOT / page).read_text().splitlines()) <= most


def test_every_results_file_is_cited_by_the_table_or_a_page():
    """A .log, .png or .txt beside a cited .json of the same name is that run's console output,
    plot or text report (benchmarks/README.md says so); every other file is named."""
    from benchmarks import results_table as table

    cited = set(RESULTS_NAME.findall(_text())) | {name for name, _, _ in table.SOURCES}
    uncited = [
        p.name
        for p in sorted(RESULTS.iterdir())
        if p.name not in cited and not (p.suffix in (".log", ".png", ".txt") and f"{p.stem}.json" in cited)
    ]
    assert uncited == []


def test_every_results_file_and_benchmark_a_page_names_exists():
    text = _text()
    # the collections' console output, the shapesets of data/, and the shapes files of benchmarks/ and its studies
    elsewhere = {
        p.name
        for p in [
            *(ROOT / "data" / "logs").glob("*"),
            *(ROOT / "data").rglob("*.json"),
            *(ROOT / "benchmarks").rglob("*.json"),
        ]
    }
    missing = sorted({n for n in RESULTS_NAME.findall(text) if not (RESULTS / n).exists() and n not in elsewhere})
    assert missing == []
    modules = set(re.findall(r"python -m (benchmarks(?:\.[a-z0-9_]+)+)", text))
    path = {m: ROOT / m.replace(".", "/") for m in modules}
    absent = sorted(
        m for m in modules if not (path[m].with_suffix(".py").exists() or (path[m] / "__init__.py").exists())
    )
    assert modules and absent == []


def test_no_page_narrates_how_the_project_came_to_be():
    found = [(page.name, m.group(0)) for page in PAGES for m in NARRATIVE.finditer(page.read_text())]
    assert found == []
