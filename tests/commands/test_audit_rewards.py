"""``medrl audit-rewards``: the record selection (a bare .jsonl path, open and closed mixed) and
the refusals with their exit codes (no rewards or unknown recipe: usage; missing data: data)."""

from __future__ import annotations

import argparse
import json

from PIL import Image

from medrl.commands import audit_rewards
from medrl.common.exit_codes import Exit


def parse(argv):
    p = argparse.ArgumentParser()
    audit_rewards.add_arguments(p)
    return p.parse_args(argv)


def write_records(tmp_path, answers):
    img = tmp_path / "img.png"
    Image.new("RGB", (8, 8)).save(img)
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", "images": [str(img)], "question": "What is shown?",
                                        "answer": a}) + "\n" for i, a in enumerate(answers)))
    return path


def test_a_bare_jsonl_path_is_read_and_open_and_closed_are_mixed(tmp_path):
    path = write_records(tmp_path, ["liver", "yes", "spleen", "no", "kidney", "no"])
    recs = audit_rewards.load_audit_records(str(path), None, 2)
    # 3 open, 3 closed; n=2 -> one of each, the first of each kind (every k-th, k = 3)
    assert [(r.id, r.answer) for r in recs[f"jsonl:{path}"]] == [("r0", "liver"), ("r1", "yes")]
    # n=4 -> two of each, every 1.5-th: open indices 0, 1 (liver, spleen), closed 0, 1 (yes, no)
    recs = audit_rewards.load_audit_records(f"jsonl:{path}", None, 4)
    assert [r.answer for r in recs[f"jsonl:{path}"]] == ["liver", "spleen", "yes", "no"]
    # several sources, comma-separated: records by source
    both = audit_rewards.load_audit_records(f"{path},jsonl:{path}", None, 2)
    assert list(both) == [f"jsonl:{path}"] and len(both[f"jsonl:{path}"]) == 2  # the same source once


def test_recipe_without_rewards_is_refused(capsys):
    assert audit_rewards.run(parse(["--recipe", "sft"])) == 2
    assert "recipe 'sft' has no rewards (an SFT recipe?)" in capsys.readouterr().err


def test_unknown_recipe_lists_the_shipped_ones(capsys):
    assert audit_rewards.run(parse(["--recipe", "no_such_recipe"])) == Exit.USAGE
    err = capsys.readouterr().err
    assert "no_such_recipe" in err and "shipped recipes:" in err and "mrpo" in err


def test_missing_data_file_is_a_data_error(tmp_path, capsys):
    rc = audit_rewards.run(parse(["--recipe", "grpo", "--data", f"jsonl:{tmp_path / 'none.jsonl'}"]))
    assert rc == Exit.DATA
    assert f"{tmp_path / 'none.jsonl'}: no such JSONL file" in capsys.readouterr().err
