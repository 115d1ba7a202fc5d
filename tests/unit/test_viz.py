"""Attention records, heatmaps and the HTML report."""

from __future__ import annotations

import json
import os
import re
import threading

import numpy as np
import pytest
from matplotlib.figure import Figure

from attnkit.errors import AttnkitError
from attnkit.viz import (
    AttentionRecord,
    Tally,
    load_records,
    load_records_json,
    load_records_npz,
    plot_heatmap,
    plot_heatmap_grid,
    save_heatmap,
    save_records,
    save_records_json,
    save_records_npz,
    write_report,
)
from attnkit.viz import report as report_module
from attnkit.viz.heatmap import display_token, figure_size, label_fontsize

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_record(source="forty two", output="42", reference="42", seed=0, **kw) -> AttentionRecord:
    src = list(source) + ["</s>"]
    out = list(output) + ["</s>"]
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(len(src)), size=len(out))  # (T, S), rows sum to 1
    return AttentionRecord(source, src, output, out, weights, reference=reference, **kw)


@pytest.fixture
def records():
    return [
        make_record(score=-0.25),
        make_record('a <b> & "c"', "x</script><y>", reference="zz", seed=1),
        make_record("seven", "7", reference=None, seed=2),
    ]


def tick_labels(fig: Figure, axis: str) -> list[str]:
    ax = fig.axes[0]
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels]


# ----------------------------------------------------------------- records


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 2\)"):
        AttentionRecord("ab", ["a", "b"], "xyz", ["x", "y", "z"], np.zeros((2, 3)))


def test_correct_compares_output_with_reference():
    assert make_record(output="42", reference="42").correct is True
    assert make_record(output="41", reference="42").correct is False
    assert make_record(reference=None).correct is None


def test_to_json_is_plain_and_rounded():
    record = make_record()
    obj = record.to_json()
    assert json.loads(json.dumps(obj)) == obj
    assert all(isinstance(x, float) for row in obj["weights"] for x in row)
    assert np.allclose(obj["weights"], record.weights, atol=5e-6)
    assert obj["weights"] == np.round(record.weights, 5).tolist()


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_round_trip(tmp_path, records, suffix):
    path = tmp_path / f"sub/attention{suffix}"
    save_records(records, path)
    back = load_records(path)
    assert len(back) == len(records)
    for a, b in zip(records, back):
        assert (a.source, a.output, a.reference) == (b.source, b.output, b.reference)
        assert a.source_tokens == b.source_tokens and a.output_tokens == b.output_tokens
        assert b.weights.shape == a.weights.shape
        assert np.allclose(a.weights, b.weights, atol=1e-5)
        assert a.score == pytest.approx(b.score) if a.score is not None else b.score is None


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_saved_records_follow_the_umask(tmp_path, records, suffix):
    """Attention records are readable by whom the umask lets read any file (not mkstemp's 0600)."""
    previous = os.umask(0o022)
    try:
        path = tmp_path / f"attention{suffix}"
        save_records(records, path)
        save_records(records, path)  # replaced through a new temporary
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_a_failed_write_names_the_file_asked_for_not_its_temporary(tmp_path, records, suffix):
    """A directory where the file belongs: the rename fails; the one line names that path."""
    from attnkit.errors import writing

    path = tmp_path / f"attention{suffix}"
    path.mkdir()
    with pytest.raises(AttnkitError) as caught, writing(path, "--attention-out "):
        save_records(records, path)
    message = str(caught.value)
    assert message.startswith(f"--attention-out {path}:") and ".tmp" not in message, message
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind


def test_npz_needs_no_pickle(tmp_path, records):
    path = tmp_path / "attention.npz"
    save_records_npz(records, path)
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["meta", "weights_0", "weights_1", "weights_2"]
        assert json.loads(str(npz["meta"][1]))["source"] == records[1].source
    assert [r.source for r in load_records_npz(path)] == [r.source for r in records]


def test_empty_and_degenerate_records_round_trip(tmp_path):
    empty_out = AttentionRecord("ab", ["a", "b"], "", [], np.zeros((0, 2)))
    save_records_json([empty_out], tmp_path / "e.json")
    assert load_records_json(tmp_path / "e.json")[0].weights.shape == (0, 2)
    save_records_json([], tmp_path / "none.json")
    assert load_records_json(tmp_path / "none.json") == []


def test_non_finite_score_stays_valid_json(tmp_path):
    save_records_json([make_record(score=float("-inf"))], tmp_path / "a.json")
    text = (tmp_path / "a.json").read_text()
    assert "Infinity" not in text
    assert load_records_json(tmp_path / "a.json")[0].score is None


@pytest.mark.parametrize(
    "content",
    [
        '{"format": "something-else", "records": []}',
        "[1, 2, 3]",
        "not json at all",
        '{"format": "attnkit-attention", "version": 99, "records": []}',
        '{"format": "attnkit-attention", "version": 1, "records": [{"source": "a"}]}',
        '{"format": "attnkit-attention", "version": 1, "records": [{"source": "a", '
        '"source_tokens": ["a"], "output": "b", "output_tokens": ["b", "c"], "weights": [[1.0]]}]}',
    ],
)
def test_foreign_or_malformed_json_names_the_file(tmp_path, content):
    path = tmp_path / "foreign.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="foreign.json") as info:
        load_records_json(path)
    assert isinstance(info.value, AttnkitError)  # the CLI reports it in one line


def test_weights_that_only_reshape_to_fit_are_rejected(tmp_path):
    obj = make_record().to_json()
    obj["weights"] = np.asarray(obj["weights"]).T.tolist()  # right size, wrong shape
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "attnkit-attention", "version": 1, "records": [obj]}))
    with pytest.raises(ValueError, match="t.json"):
        load_records_json(path)


def test_foreign_npz_and_missing_file_name_the_file(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, x=np.zeros(3))
    with pytest.raises(ValueError, match="other.npz"):
        load_records_npz(path)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz"):
        load_records_npz(tmp_path / "junk.npz")
    with pytest.raises(ValueError, match="missing.json"):
        load_records_json(tmp_path / "missing.json")


OLD_RECORD = {  # as attnkit wrote records before they carried index, right and chrf
    "source": "zwei",
    "source_tokens": ["zwei", "</s>"],
    "output": "3",
    "output_tokens": ["3", "</s>"],
    "reference": "2",
    "score": -0.5,
    "weights": [[0.9, 0.1], [0.2, 0.8]],
}


def test_records_files_without_the_judged_fields_still_load(tmp_path):
    doc = {"format": "attnkit-attention", "version": 1, "records": [OLD_RECORD]}
    (tmp_path / "old.json").write_text(json.dumps(doc))
    meta = {k: v for k, v in OLD_RECORD.items() if k != "weights"}
    meta = json.dumps({"format": "attnkit-attention", "version": 1, **meta})
    weights = np.asarray(OLD_RECORD["weights"], dtype=np.float32)
    np.savez(tmp_path / "old.npz", weights_0=weights, meta=np.array([meta], dtype=np.str_))
    for name in ("old.json", "old.npz"):
        (back,) = load_records(tmp_path / name)
        assert (back.index, back.right, back.chrf) == (None, None, None)
        assert back.correct is False  # judged as before: the output against its reference
        assert np.allclose(back.weights, weights)


def test_judged_fields_round_trip_and_decide_correct(tmp_path):
    # right: the evaluation matched another of its references than the one shown
    judged = make_record(output="79", reference="97", index=np.int64(12), right=True, chrf=40)
    assert judged.correct is True and isinstance(judged.index, int)
    assert "right" not in make_record().to_json()  # unset fields are not written
    for name in ("j.json", "j.npz"):
        save_records([judged], tmp_path / name)
        (back,) = load_records(tmp_path / name)
        assert (back.index, back.right, back.chrf) == (12, True, 40.0)


@pytest.mark.parametrize("key, value", [("right", "yes"), ("index", 1.5), ("chrf", "high")])
def test_a_bad_judged_field_names_the_file_and_key(tmp_path, key, value):
    doc = {"format": "attnkit-attention", "version": 1, "records": [{**OLD_RECORD, key: value}]}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(AttnkitError, match=rf"bad.json.*record 0: '{key}'"):
        load_records(tmp_path / "bad.json")


def test_save_records_rejects_unknown_suffix(tmp_path, records):
    with pytest.raises(ValueError, match=r"\.txt"):
        save_records(records, tmp_path / "a.txt")


# ---------------------------------------------------------------- heatmaps


def test_png_written(tmp_path):
    path = save_heatmap(make_record(), tmp_path / "deep/dir/h.png")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 5_000


def test_svg_keeps_token_text(tmp_path):
    record = AttentionRecord(
        "hello world", ["hello", "world"], "hallo", ["hallo"], np.array([[0.3, 0.7]])
    )
    path = save_heatmap(record, tmp_path / "h.svg")
    svg = path.read_text()
    assert svg.lstrip().startswith(("<?xml", "<svg"))
    assert "hello" in svg and "world" in svg and "hallo" in svg
    assert "attention weight" in svg


def test_save_heatmap_rejects_other_formats(tmp_path):
    with pytest.raises(ValueError, match=r"\.jpg"):
        save_heatmap(make_record(), tmp_path / "h.jpg")
    assert not (tmp_path / "h.jpg").exists()


def test_space_token_is_visible_and_dollars_stay_literal():
    assert display_token(" ") == "␣"
    assert display_token("Mary moved to the bathroom.") == "Mary moved to the bathroom."
    assert display_token(" a  b ") == "␣a␣␣b␣"  # at the edges and in a run: marked
    assert display_token("") == "∅"
    fig = plot_heatmap(make_record("a b$", output="$5"))
    xs = tick_labels(fig, "x")
    assert xs[1] == "␣" and " " not in xs
    assert tick_labels(fig, "y")[0] == r"\$"


def test_axes_and_colour_bar():
    record = make_record()
    fig = plot_heatmap(record, title="forty two")
    ax, cbar = fig.axes
    assert tick_labels(fig, "x") == [display_token(t) for t in record.source_tokens]
    assert tick_labels(fig, "y") == record.output_tokens
    assert cbar.get_ylabel() == "attention weight"
    assert ax.get_title() == "forty two"


def test_plain_array_and_token_overrides():
    weights = np.full((2, 3), 1 / 3)
    fig = plot_heatmap(weights)
    assert tick_labels(fig, "x") == ["0", "1", "2"]
    fig = plot_heatmap(weights, ["a", "b", "c"], ["x", "y"])
    assert tick_labels(fig, "x") == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        plot_heatmap(weights, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="2-D"):
        plot_heatmap(np.zeros(3))


def test_torch_tensor_accepted():
    torch = pytest.importorskip("torch")
    fig = plot_heatmap(torch.softmax(torch.randn(2, 4, requires_grad=True), -1))
    assert fig.axes[0].get_images()[0].get_array().shape == (2, 4)


def test_annotation_only_for_small_matrices():
    small = plot_heatmap(np.full((3, 4), 0.25))
    assert sum(t.get_text() == "0.25" for t in small.axes[0].texts) == 12
    big = np.full((13, 13), 1 / 13)
    assert len(plot_heatmap(big).axes[0].texts) == 0
    assert len(plot_heatmap(big, annotate=True).axes[0].texts) == 169
    assert len(plot_heatmap(np.full((3, 4), 0.25), annotate=False).axes[0].texts) == 0


def test_size_and_font_scale_with_the_matrix():
    assert figure_size(1, 1) == (4.0, 3.0)
    w_small, h_small = figure_size(5, 5)
    w_big, h_big = figure_size(30, 40)
    assert w_big > w_small and h_big > h_small
    assert figure_size(1000, 1000) == (16.0, 12.0)
    assert label_fontsize(10) > label_fontsize(60) >= 5.0
    assert label_fontsize(500) == 5.0


def test_long_labels_rotate_short_ones_do_not():
    short = plot_heatmap(make_record("twenty three"))
    assert all(t.get_rotation() == 0 for t in short.axes[0].get_xticklabels())
    words = ["international", "cooperation", "is", "indispensable", "nowadays"] * 3
    long = plot_heatmap(np.full((2, len(words)), 1 / len(words)), words, ["a", "b"])
    assert all(t.get_rotation() == 60 for t in long.axes[0].get_xticklabels())


def test_draws_into_given_axes():
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_heatmap(make_record(), ax=ax) is fig
    assert tick_labels(fig, "y") == make_record().output_tokens


def test_grid(tmp_path, records):
    fig = plot_heatmap_grid(records[:2], tmp_path / "grid.png", cols=2)
    assert (tmp_path / "grid.png").read_bytes().startswith(PNG_MAGIC)
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert len(panels) == 2
    assert panels[0].get_title().startswith("✓") and panels[1].get_title().startswith("✗")
    fig = plot_heatmap_grid(records, None, cols=2)  # 2 x 2, the fourth cell left blank
    assert len([ax for ax in fig.axes if ax.get_images()]) == 3
    assert not fig.axes[3].axison
    with pytest.raises(ValueError):
        plot_heatmap_grid([], tmp_path / "empty.png")


def test_threads_do_not_interfere(tmp_path):
    errors = []

    def work(i):
        try:
            save_heatmap(make_record(seed=i), tmp_path / f"t{i}.png")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all((tmp_path / f"t{i}.png").read_bytes().startswith(PNG_MAGIC) for i in range(2))


# ------------------------------------------------------------------ report


def embedded_data(page: str) -> dict:
    match = re.search(
        r'<script type="application/json" id="attnkit-data">(.*?)</script>', page, re.S
    )
    assert match, "no embedded JSON"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    """One report shared by the tests below (rendering its PNGs is the slow part)."""
    records = [
        make_record(score=-0.25),
        make_record('a <b> & "c"', "x</script><y>", reference="zz", seed=1),
        make_record("seven", "7", reference=None, seed=2),
    ]
    path = write_report(
        tmp_path_factory.mktemp("report") / "out/report.html",
        "Run <1> & co",
        {"bleu": 31.234567, "acc": 0.5, "dev": {"loss": 1.25}, "steps": 1200},
        records,
        config={"model": {"hidden": 64, "attention": "bahdanau"}},
        notes="tiny <i>run</i>",
    )
    return records, path.read_text(encoding="utf-8")


def test_report_names_metrics_in_words_and_wraps_at_word_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr("attnkit.viz.report.STATIC_PICTURES", 0)
    metrics = {
        "model": "runs/x/best",
        "metric": "exact_match",
        "higher_is_better": True,
        "backend": "backend: native ...",
        "greedy": {"exact_match": 81.75, "items": 400, "bleu": 30.5},
        "beam5": {"exact_match": 82.0},
    }
    page = write_report(tmp_path / "r.html", "t", metrics, [make_record()]).read_text()
    table = page.split('<table class="metrics">')[1].split("</table>")[0]
    rows = dict(re.findall(r"<tr><th>(.*?)</th><td[^>]*>(.*?)</td></tr>", table))
    assert rows["exact match (greedy)"] == "81.75%" and rows["exact match (beam 5)"] == "82%"
    assert rows["BLEU (greedy)"] == "30.5" and rows["items scored (greedy)"] == "400"
    assert rows["metric"] == "exact_match"
    for raw in ("higher_is_better", "backend", "runs/x/best", "greedy.exact_match"):
        assert raw not in table
    assert "break-all" not in page and "overflow-wrap:break-word" in page


def test_a_pictured_error_shows_its_reference_once(tmp_path, monkeypatch):
    monkeypatch.setattr("attnkit.viz.report.STATIC_PICTURES", 1)
    wrong = make_record("elf", "17", reference="eleven-ref", index=8, right=False)
    page = write_report(tmp_path / "r.html", "t", {}, [wrong]).read_text()
    body = page.split('<ol class="examples"')[1].split("<script")[0]
    assert body.count("eleven-ref") == 1 and '<aside class="beside">' in body


def test_report_escapes_user_text(report_page):
    _, page = report_page
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>Run &lt;1&gt; &amp; co</title>" in page
    assert "a &lt;b&gt; &amp; &quot;c&quot;" in page  # source, escaped
    assert "x&lt;/script&gt;&lt;y&gt;" in page  # output, escaped
    assert "<b>" not in page and "<i>run" not in page
    # exactly one </script> per script tag: user text cannot break out
    assert page.count("</script>") == 2


def test_report_shows_metrics_config_and_marks(report_page):
    _, page = report_page
    assert "31.23" in page and "<th>loss (dev)</th>" in page and "1,200" in page
    assert "<details>" in page and "attention: bahdanau" in page  # the config as YAML
    assert page.count("✓ right") == 1 and page.count("✗ wrong") == 1  # third has no reference
    assert page.count('class="ex"') == 3
    assert "score -0.250" in page


def test_report_embeds_records_as_json(report_page):
    records, page = report_page
    data = embedded_data(page)
    back = [AttentionRecord.from_json(obj) for obj in data["records"]]
    assert [r.source for r in back] == [r.source for r in records]
    assert [r.output for r in back] == [r.output for r in records]
    for a, b in zip(records, back):
        assert a.source_tokens == b.source_tokens
        assert np.allclose(a.weights, b.weights, atol=1e-5)


def test_report_is_self_contained(report_page):
    records, page = report_page
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "@import" not in page and "url(" not in page
    assert page.count("data:image/png;base64,") == len(records)  # first few, here all 3


def test_report_caps_pictures_and_survives_nan(tmp_path, monkeypatch):
    monkeypatch.setattr("attnkit.viz.report.STATIC_PICTURES", 1)
    many = [make_record(seed=i) for i in range(3)]
    nan = AttentionRecord("ab", ["a", "b"], "c", ["c"], np.array([[np.nan, 1.0]]))
    page = write_report(tmp_path / "r.html", "t", {"x": float("nan")}, many + [nan]).read_text()
    assert page.count("data:image/png;base64,") == 1
    data = embedded_data(page)  # still valid JSON: no NaN tokens
    assert len(data["records"]) == 4 and "NaN" not in json.dumps(data)


def listed(page: str) -> list[dict]:
    """The attributes of the report's examples, in the order listed."""
    return [
        dict(re.findall(r'data-([a-z]+)="([^"]*)"', li))
        for li in re.findall(r'<li class="ex"[^>]*>', page)
    ]


def test_report_lists_the_errors_first_and_counts_them(tmp_path, monkeypatch):
    monkeypatch.setattr("attnkit.viz.report.STATIC_PICTURES", 0)  # no PNGs: faster
    records = [
        make_record(output="42", reference="42", index=0, right=True, score=-0.1),
        make_record(output="24", reference="42", index=3, right=False, score=-2.0),
        make_record("sieben", "7", reference=None, seed=2),
        make_record("elf", "17", reference="11", index=8, right=False),
    ]
    path = write_report(tmp_path / "r.html", "t", {}, records, tally=Tally(wrong=2, total=400))
    page = path.read_text()
    shown = listed(page)
    assert [s["status"] for s in shown] == ["wrong", "wrong", "right", "none"]
    assert [int(s["i"]) for s in shown] == [1, 3, 0, 2]  # positions in the embedded records
    assert [r["source"] for r in embedded_data(page)["records"]] == [r.source for r in records]
    assert [s["order"] for s in shown] == ["0", "1", "2", "3"]
    assert [s.get("score") for s in shown] == ["-2.0", None, "-0.1", None]
    assert [int(s["len"]) for s in shown] == [len(records[i].source_tokens) for i in (1, 3, 0, 2)]
    assert '<span class="tally">2 wrong of 400</span>' in page
    assert ">wrong (2)</option>" in page and ">right (1)</option>" in page
    assert ">all (4)</option>" in page and '<option value="chrf">' not in page  # no chrF
    assert page.count('<div class="pair">') == 2  # each error's reference beside its output
    assert "#3</span>" in page and "#8</span>" in page
    more = write_report(tmp_path / "m.html", "t", {}, records, tally=Tally(wrong=150, total=400))
    assert "150 wrong of 400 (the first 2 shown)" in more.read_text()


def test_a_translation_report_shows_chrf_instead_of_wrong(tmp_path, monkeypatch):
    monkeypatch.setattr("attnkit.viz.report.STATIC_PICTURES", 1)
    records = [
        make_record("ein hund", "a dog", reference="a dog", right=True, chrf=100.0),
        make_record("eine katze", "a dog", reference="a cat", right=False, chrf=31.25),
    ]
    page = write_report(tmp_path / "r.html", "t", {}, records).read_text()
    body = page.split("</style>")[1].split('<script type="application/json"')[0]
    text = re.sub(r"<[^>]*>", " ", body)  # what the page says, not its markup or script
    assert "chrF 31.2" in text and "✗" not in text and "wrong" not in text
    assert "✓ identical" in page and ">not identical (1)</option>" in page
    assert '<option value="chrf">' in page and [s["chrf"] for s in listed(page)] == [
        "31.25",
        "100.0",
    ]
    # the first example is pictured: an error, its reference beside the picture
    assert re.search(r'<img [^>]*><aside class="beside"><div class="k">reference</div>', page)
    assert '<span class="tally">1 not identical of 2 shown</span>' in page


def test_a_report_of_other_maps_names_them_on_every_picture(tmp_path, monkeypatch):
    """map_title (a model without attention: its saliency) is written above the examples and on
    the static pictures, whose colour bar no longer says "attention weight"."""
    drawn = []
    plot = report_module.plot_heatmap
    monkeypatch.setattr(
        report_module, "plot_heatmap", lambda r, **kw: drawn.append(kw) or plot(r, **kw)
    )
    title = "no attention: gradient saliency"
    page = write_report(tmp_path / "r.html", "t", {}, [make_record()], map_title=title)
    assert f"({title})" in page.read_text() and f'alt="{title}"' in page.read_text()
    assert drawn == [{"title": title, "value_label": "weight"}]
    write_report(tmp_path / "a.html", "t", {}, [make_record()])
    assert drawn[1] == {"title": None, "value_label": "attention weight"}


def test_the_colour_bar_names_the_values():
    fig = plot_heatmap(make_record(), value_label="saliency")
    assert [ax.get_ylabel() for ax in fig.axes][-1] == "saliency"
    assert plot_heatmap(make_record()).axes[-1].get_ylabel() == "attention weight"


def test_report_inlines_the_explorers_heatmap_renderer(report_page):
    """One renderer: viz/static/heatmap.js (the page serves it too), verbatim, draws the report's
    maps."""
    from importlib import resources

    served = resources.files("attnkit") / "viz" / "static" / "heatmap.js"
    _, page = report_page
    assert report_module.heatmap_js() == served.read_text(encoding="utf-8")
    assert served.read_text(encoding="utf-8") in page
    assert "AttnkitHeatmap.draw(" in page


def test_the_renderer_must_not_end_the_inline_script(tmp_path, monkeypatch):
    bad = tmp_path / "attnkit" / "viz" / "static"
    bad.mkdir(parents=True)
    (bad / "heatmap.js").write_text("var s = '</SCRIPT>';")
    monkeypatch.setattr(report_module.resources, "files", lambda _: tmp_path / "attnkit")
    with pytest.raises(ValueError, match="must not contain '</script'"):
        write_report(tmp_path / "r.html", "t", {}, [make_record()])


def test_gold_links_round_trip_and_are_checked(tmp_path):
    from attnkit.viz.records import AttentionRecord, load_records, save_records

    rec = AttentionRecord("ab", ["a", "b", "</s>"], "x", ["x", "</s>"], np.full((2, 3), 1 / 3))
    rec.gold = [(0, 1), (0, 0)]
    rec.__post_init__()  # checked and sorted as when given to the constructor
    assert rec.gold == [(0, 0), (0, 1)]
    for suffix in (".json", ".npz"):
        save_records([rec], tmp_path / f"r{suffix}")
        (back,) = load_records(tmp_path / f"r{suffix}")
        assert back.gold == [(0, 0), (0, 1)]
    with pytest.raises(ValueError, match=r"gold link \(2, 0\) is outside the 2 x 3 map"):
        AttentionRecord(
            "ab", ["a", "b", "</s>"], "x", ["x", "</s>"], np.ones((2, 3)), gold=[(2, 0)]
        )
    bad = rec.to_json()
    bad["gold"] = [[0, "1"]]
    with pytest.raises(TypeError, match="'gold' must be a list"):
        AttentionRecord.from_json(bad)


@pytest.mark.parametrize("name", ["saliency", "rollout", "flow"])
def test_maps_beside_the_weights_round_trip_and_are_checked(tmp_path, name):
    from attnkit.viz.records import AttentionRecord, load_records, save_records

    weights = np.full((2, 3), 1 / 3)
    rec = AttentionRecord("ab", ["a", "b", "</s>"], "x", ["x", "</s>"], weights)
    setattr(rec, name, np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]))
    rec.__post_init__()
    for suffix in (".json", ".npz"):
        save_records([rec], tmp_path / f"r{suffix}")
        (back,) = load_records(tmp_path / f"r{suffix}")
        np.testing.assert_allclose(getattr(back, name), getattr(rec, name), atol=1e-6)
        others = {"saliency", "rollout", "flow"} - {name}
        assert all(getattr(back, other) is None for other in others)
    with pytest.raises(ValueError, match=rf"{name} has shape \(1, 3\), expected \(2, 3\)"):
        AttentionRecord(
            "ab", ["a", "b", "</s>"], "x", ["x", "</s>"], weights, **{name: np.ones((1, 3))}
        )
