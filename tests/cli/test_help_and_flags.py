"""The command line as people expect it (issue 16 item 7 and the summarize part of item 8).

What a new user sees, reproduced: ``medaudit --help`` and every command's help (a description,
examples, help on every option), an unknown flag reported as unknown, every error and warning
one line, ``summarize`` naming its file and its own flag, the README's sentence on weights
against the model registry, and ``medaudit score`` without weights and without network.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--n-resamples", "30", "--n-permutations", "19", "--quiet"]


def _walk(p: argparse.ArgumentParser, path: tuple[str, ...] = ("medaudit",)):
    yield path, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _walk(sp, (*path, name))


PARSERS = list(_walk(build_parser()))


def _run(argv, capsys) -> tuple[int, list[str]]:
    """main(argv) in process: exit code and the stderr lines (usage errors exit via SystemExit)."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err.strip().splitlines()


# --------------------------------------------------------------------------- help


def test_every_command_is_walked():
    names = {" ".join(p) for p, _ in PARSERS}
    assert {"medaudit", "medaudit audit", "medaudit summarize", "medaudit score", "medaudit init",
            "medaudit dicom convert", "medaudit train supervised", "medaudit plan"} <= names


@pytest.mark.parametrize("path, parser", PARSERS, ids=[" ".join(p) for p, _ in PARSERS])
def test_every_option_has_help(path, parser):
    skip = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    missing = [a.option_strings or a.dest for a in parser._actions
               if not isinstance(a, skip) and (not a.help or a.help == argparse.SUPPRESS)]
    assert not missing, (path, missing)


@pytest.mark.parametrize("path, parser", PARSERS, ids=[" ".join(p) for p, _ in PARSERS])
def test_every_command_has_a_description_and_examples(path, parser):
    assert parser.description and len(parser.description) > 40, path
    assert parser.formatter_class is argparse.RawDescriptionHelpFormatter, path
    assert parser.epilog and parser.epilog.startswith("examples:"), path
    lines = [ln.strip() for ln in parser.epilog.splitlines()[1:] if ln.strip().startswith("medaudit ")]
    assert 2 <= len(lines) <= 4, (path, lines)
    # the examples are command lines of this very command
    assert all(ln.startswith(" ".join(path)) or len(path) == 1 or ln.startswith("medaudit audit")
               for ln in lines), (path, lines)


def test_top_level_help_as_a_user_runs_it():
    res = subprocess.run([sys.executable, "-m", "medaudit", "--help"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120)
    assert res.returncode == 0
    out = res.stdout
    assert "audits how a medical-imaging AI model is evaluated" in out
    assert "examples:\n  medaudit init scores.csv" in out  # raw layout kept
    for cmd in ("audit", "summarize", "init", "score", "report", "demo", "plan"):
        assert re.search(rf"^\s+{cmd}\s", out, re.M), cmd


# --------------------------------------------------------------------------- flags


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "spec.yaml"
    p.write_text("scores: s.csv\n")
    return p


def test_unknown_flag_is_reported_as_unknown_with_the_closest_option(spec, capsys):
    rc, err = _run(["audit", spec, "--output", spec.parent / "x"], capsys)
    assert rc == 2 and len(err) == 1, err
    assert "unrecognized argument --output (did you mean --out?)" in err[0]
    assert "required" not in err[0]
    assert not (spec.parent / "x").exists()


def test_missing_out_after_the_line_is_read(spec, capsys):
    rc, err = _run(["audit", spec], capsys)
    assert rc == 2 and len(err) == 1 and "required: --out" in err[0], err
    rc, err = _run(["summarize", spec, "--out", "o", "--bogus", "1"], capsys)
    assert rc == 2 and err == [err[0]] and "unrecognized argument --bogus;" in err[0], err


def test_misspelt_command(capsys):
    rc, err = _run(["audt", "spec.yaml"], capsys)
    assert rc == 2 and len(err) == 1 and "unknown command 'audt' (did you mean 'audit'?)" in err[0]


def test_help_still_shows_required_options(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    out = capsys.readouterr().out
    assert "--model MODEL" in out and "[--model MODEL]" not in out and "--out OUT" in out


# --------------------------------------------------------------------------- summarize


def _scores(tmp_path: Path, name: str = "scores.csv", **change) -> Path:
    gen = np.random.default_rng(0)
    rows = []
    for c in ("h1", "h2"):
        y = np.r_[np.ones(15), np.zeros(25)].astype(int)
        for m in ("a", "b"):
            s = np.clip(0.3 * y + 0.7 * gen.random(40), 0, 1)
            rows += [{"image_id": f"{c}-{i}", "cohort": c, "model": m, "score": float(s[i]),
                      "label": int(y[i])} for i in range(40)]
    t = pd.DataFrame(rows)
    if "negatives_only" in change:
        t.loc[t["cohort"] == change["negatives_only"], "label"] = 0
    if change.get("logits"):
        t["score"] = 8 * t["score"] - 4
    if "one_positive" in change:
        c = change["one_positive"]
        t.loc[(t["cohort"] == c) & (t["label"] == 1) & (t["image_id"] != f"{c}-0"), "label"] = 0
    p = tmp_path / name
    t.to_csv(p, index=False)
    return p


def test_summarize_names_its_flag_not_a_spec_key(tmp_path, capsys):
    src = _scores(tmp_path, logits=True)
    rc, err = _run(["summarize", src, "--out", tmp_path / "o", "--score-scale", "probabilities",
                    *FAST], capsys)
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"medaudit: error: {src}: column 'score' must be probabilities")
    assert "Pass --score-scale logits" in err[0] and "score_scale: logits" not in err[0]
    assert not (tmp_path / "o").exists()
    # and the flag does what it says
    assert main(["summarize", str(src), "--out", str(tmp_path / "o"), "--score-scale", "logits",
                 *FAST]) == 0
    import json

    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["provenance"]["spec"]["score_scale"] == "logits"


def test_summarize_negatives_only_cohort_is_one_line_naming_file_cohort_and_remedy(tmp_path, capsys):
    src = _scores(tmp_path, negatives_only="h2")
    rc, err = _run(["summarize", src, "--out", tmp_path / "o", *FAST], capsys)
    assert rc == 2 and len(err) == 1, err
    line = err[0]
    assert line.startswith(f"medaudit: error: {src}: cohort 'h2' has only negatives")
    assert "medaudit init" in line and "Remove the cohort's rows" in line
    assert line.endswith("and run `medaudit audit` on that spec.")  # not cut at a colon
    assert "DeLong" not in line and "Warning" not in line and "score table:" not in line


def test_warnings_are_one_line_each_without_a_source_path(tmp_path, capsys):
    src = _scores(tmp_path, one_positive="h2")  # DeLong variance undefined with one positive
    rc = main(["summarize", str(src), "--out", str(tmp_path / "o"), *FAST[:-1]])  # not --quiet
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 0
    assert all(ln.startswith("medaudit: ") for ln in err), err  # progress lines and warnings
    warned = [ln for ln in err if ln.startswith("medaudit: warning: ")]
    assert any("DeLong variance is undefined" in ln for ln in warned), err
    assert not [ln for ln in err if ".py:" in ln or "UndefinedMetricWarning" in ln], err
    # --quiet: errors only
    rc = main(["summarize", str(src), "--out", str(tmp_path / "q"), *FAST])
    assert rc == 0 and capsys.readouterr().err == ""


def test_an_error_listing_several_problems_is_one_line(tmp_path, capsys):
    src = _scores(tmp_path)
    t = pd.read_csv(src)
    t = t[~((t["model"] == "a") & t["image_id"].isin(["h1-3", "h1-4"]))]
    t.to_csv(src, index=False)
    rc, err = _run(["summarize", src, "--out", tmp_path / "o", *FAST], capsys)
    assert rc == 2 and len(err) == 1, err
    assert "identical image sets" in err[0] and "h1-3" in err[0]


# --------------------------------------------------------------------------- weights


def test_readme_states_what_score_does_without_weights():
    from medaudit.adapters.registry import REGISTRY

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    para = readme[readme.index("Model weights:"):]
    para = " ".join(para[:para.index("\n\n")].split())
    assert "Without `--weights` it downloads the checkpoint from its hub" in para
    pinned, unpinned = para.split(" at their pinned revision, ")
    for name, entry in REGISTRY.items():  # the code is the witness of which is pinned
        assert f"`{name}`" in (pinned if entry.revision else unpinned.split(". ")[0]), name
    helptext = build_parser()._subparsers._group_actions[0].choices["score"].description
    assert "Without --weights, the checkpoint is downloaded from its hub" in helptext
    assert "offline, the command stops with one line" in para and "offline, the command stops" in \
        " ".join(helptext.split())


def test_score_without_weights_offline_is_one_clear_line(tmp_path):
    if importlib.util.find_spec("open_clip") is None:  # not imported here: seconds
        pytest.skip("open_clip is not installed")
    from PIL import Image

    Image.new("L", (32, 32), 128).save(tmp_path / "a.png")
    (tmp_path / "m.csv").write_text("image_id,path,cohort,label\na,a.png,c,1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "hf"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for k in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
              "PYTORCH_TRANSFORMERS_CACHE", "PYTORCH_PRETRAINED_BERT_CACHE"):
        env.pop(k, None)  # the empty HF_HOME above is the whole cache
    res = subprocess.run([sys.executable, "-m", "medaudit", "score", "m.csv", "--model", "biomedclip",
                          "--out", "s.csv"], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=300)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith("medaudit: error: could not fetch 'hf-hub:microsoft/BiomedCLIP")
    assert "--weights" in lines[0] and "None" not in lines[0]
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize("bad", ["nan", "-1", "0", "65"])
def test_demo_scale_out_of_range_names_the_flag(bad, tmp_path, capsys):
    from medaudit.cli.main import main

    assert main(["demo", "--out", str(tmp_path / "o"), "--scale", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("medaudit: error: --scale must be a fraction of the simulated study")
    assert err.count("\n") == 0 and not (tmp_path / "o").exists()


def test_summarize_help_states_the_score_scale_rule_it_applies(capsys):
    # probe finding: the flag's help said "logits when a score lies outside [0, 1]" while the
    # command (and its description) takes logits only when a score is negative
    from medaudit.audit.defaults import infer_score_scale
    from medaudit.cli.main import main

    with pytest.raises(SystemExit):
        main(["summarize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("logits when scores are negative -- not a stray 1 % among values in [0, 1], which "
            "are refused with their row -- else probabilities") in text
    assert "lies outside" not in text
    import pandas as pd
    assert infer_score_scale(pd.DataFrame({"score": [0.04, 2.96]})) == "probabilities"
    assert infer_score_scale(pd.DataFrame({"score": [-0.1, 0.5]})) == "probabilities"  # a stray one
    assert infer_score_scale(pd.DataFrame({"score": [-0.1, 1.5]})) == "logits"
    assert infer_score_scale(pd.DataFrame({"score": [-0.1, -0.3, 0.5]})) == "logits"
