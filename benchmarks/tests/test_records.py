"""The benchmark record contract: :class:`BenchRecord` validation (each rejection), the writer's
incremental atomic JSON, and the round trip through ``SUITE.json``."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from zbound_benchmarks.records import (
    REQUIRED_FIELDS,
    BenchRecord,
    DuplicateRecordWarning,
    RecordWriter,
    read_suite,
    validate_doc,
)


def _fields(**changes):
    rec = {"task": "table3", "dataset": "wine", "setting": "lambda=100", "method": "bound",
           "peer": False, "default": False, "reached": True, "time_to_target_s": 0.25,
           "evaluations": 12, "final_objective": 10.0, "target_objective": 10.5,
           "metrics": {"iterations": 11, "lambda": 100.0, "per_start": [0.2, 0.3]}}
    rec.update(changes)
    return rec


def test_fields_are_the_contract_in_order():
    assert tuple(f.name for f in dataclasses.fields(BenchRecord)) == REQUIRED_FIELDS
    rec = BenchRecord.from_dict(_fields())
    assert tuple(rec.to_dict()) == REQUIRED_FIELDS
    assert rec.key == ("table3", "wine", "lambda=100", "bound")


def test_neutral_defaults():
    rec = BenchRecord(task="t", dataset="d", setting="s", method="m")
    assert (rec.peer, rec.default, rec.reached) == (False, False, False)
    assert rec.time_to_target_s is None and rec.evaluations is None and rec.metrics == {}
    assert rec.final_objective is None and rec.target_objective is None


@pytest.mark.parametrize("missing", ["task", "dataset", "setting", "method"])
def test_rejects_missing_required_field(missing):
    fields = _fields()
    del fields[missing]
    with pytest.raises(ValueError, match=rf"lacks fields \['{missing}'\]"):
        BenchRecord.from_dict(fields)


def test_rejects_unknown_field_and_suggests_the_right_name():
    with pytest.raises(ValueError, match="unknown fields 'time_to_target' "
                                         r"\(did you mean 'time_to_target_s'\?\)"):
        BenchRecord.from_dict(_fields(time_to_target=1.0))
    with pytest.raises(ValueError, match="unknown fields 'colour'"):
        BenchRecord.from_dict(_fields(colour="red"))


@pytest.mark.parametrize("change, message", [
    ({"task": 3}, "'task' must be a str"),
    ({"setting": None}, "'setting' must be a str"),
    ({"peer": "no"}, "'peer' must be a bool"),
    ({"default": 1}, "'default' must be a bool"),
    ({"reached": None}, "'reached' must be a bool"),
    ({"time_to_target_s": "0.5"}, "time_to_target_s must be a number"),
    ({"time_to_target_s": True}, "time_to_target_s must be a number"),
    ({"evaluations": "12"}, "evaluations must be an int"),
    ({"evaluations": False}, "evaluations must be an int"),
    ({"final_objective": "1.0"}, "final_objective must be a number"),
    ({"target_objective": [1.0]}, "target_objective must be a number"),
    ({"metrics": [("iterations", 3)]}, "metrics must be a dict"),
    ({"metrics": {3: "x"}}, "metrics keys must be str"),
    ({"metrics": {"iterations": "many"}}, r"metrics\['iterations'\] must be a number"),
    ({"metrics": {"test_accuracy": [0.9]}}, r"metrics\['test_accuracy'\] must be a number"),
    ({"metrics": {"model": object()}}, "metrics are not JSON-serializable"),
])
def test_rejects_wrong_types(change, message):
    with pytest.raises(TypeError, match=message):
        BenchRecord.from_dict(_fields(**change))


@pytest.mark.parametrize("change, message", [
    ({"task": ""}, "'task' must not be empty"),
    ({"dataset": "  "}, "'dataset' must not be empty"),
    ({"setting": "lambda=100\nC=1"}, "short one-line label"),
    ({"method": "m" * 500}, "short one-line label"),
    ({"peer": True, "default": True}, "peer method cannot be the library default"),
    ({"time_to_target_s": -0.1}, "time_to_target_s must be finite and >= 0"),
    ({"time_to_target_s": math.nan}, "time_to_target_s must be finite and >= 0"),
    ({"time_to_target_s": math.inf}, "time_to_target_s must be finite and >= 0"),
    ({"evaluations": -1}, "evaluations must be >= 0"),
    ({"evaluations": math.inf}, "evaluations must be finite"),
    ({"reached": True, "time_to_target_s": None}, "gives no time_to_target_s"),
    ({"metrics": {"test_accuracy": 1.5}}, r"must lie in \[0, 1\]"),
    ({"metrics": {"f1": -0.1}}, r"must lie in \[0, 1\]"),
    ({"metrics": {"iterations": -3}}, r"metrics\['iterations'\] must be >= 0"),
    ({"metrics": {"peak_memory_mb": -1.0}}, r"metrics\['peak_memory_mb'\] must be >= 0"),
])
def test_rejects_wrong_values(change, message):
    with pytest.raises(ValueError, match=message):
        BenchRecord.from_dict(_fields(**change))


def test_error_names_the_record():
    with pytest.raises(ValueError, match="record table3/wine/lambda=100/bound"):
        BenchRecord.from_dict(_fields(time_to_target_s=-1.0))


def test_accepted_edge_cases():
    # no target: a bound value or an iteration count, nothing to time
    rec = BenchRecord.from_dict(_fields(reached=True, time_to_target_s=None,
                                        target_objective=None))
    assert rec.time_to_target_s is None
    # reached used as a validity flag: a timed run that is not "reached"
    assert BenchRecord.from_dict(_fields(reached=False)).time_to_target_s == 0.25
    # a mean count over random draws
    assert BenchRecord.from_dict(_fields(evaluations=12.5)).evaluations == 12.5
    # a peer (not default) and the default (not peer)
    BenchRecord.from_dict(_fields(peer=True))
    BenchRecord.from_dict(_fields(default=True))
    # a non-finite objective is recorded as null (JSON has no NaN)
    rec = BenchRecord.from_dict(_fields(final_objective=math.inf, reached=False))
    assert rec.final_objective is None


def test_numpy_scalars_become_python():
    rec = BenchRecord.from_dict(_fields(
        peer=np.bool_(True), reached=np.bool_(True), time_to_target_s=np.float64(0.5),
        evaluations=np.int64(7), final_objective=np.float32(2.0), task=np.str_("table3"),
        metrics={"iterations": np.int64(4), "curve": np.arange(3.0), "gap": np.float64(np.nan)}))
    assert rec.peer is True and rec.reached is True
    assert type(rec.time_to_target_s) is float and type(rec.evaluations) is int
    assert type(rec.final_objective) is float and type(rec.task) is str
    assert rec.metrics == {"iterations": 4, "curve": [0.0, 1.0, 2.0], "gap": None}
    json.dumps(rec.to_dict(), allow_nan=False)


def test_writer_rejects_and_keeps_the_file_valid(tmp_path):
    w = RecordWriter("demo", quick=True, out=tmp_path, duplicates="error")
    w.add(**_fields())
    with pytest.raises(ValueError, match="duplicate benchmark record table3/wine/lambda=100/bound"):
        w.add(**_fields(time_to_target_s=0.5))
    with pytest.raises(TypeError):
        w.add(**_fields(method="squarem", reached="yes"))
    with pytest.raises(ValueError):
        w.add(**_fields(method="squarem", typo=1))
    doc = read_suite(tmp_path / "demo.json")
    assert len(doc["records"]) == 1 and len(w.records) == 1
    assert not (tmp_path / "demo.json.tmp").exists()
    with pytest.raises(TypeError, match="not JSON-serializable"):
        w.set_extra("bad", {"x": object()})
    with pytest.raises(TypeError, match="extra key must be a str"):
        w.set_extra(3, 1)
    read_suite(tmp_path / "demo.json")


def test_duplicates_are_rejected_by_default(tmp_path):
    w = RecordWriter("dup", quick=True, out=tmp_path)
    w.add(**_fields())
    with pytest.raises(ValueError, match="duplicate"):
        w.add(**_fields())
    assert len(w.records) == 1
    lax = RecordWriter("dup", quick=True, out=tmp_path, duplicates="warn")
    lax.add(**_fields())
    with pytest.warns(DuplicateRecordWarning, match="table3/wine/lambda=100/bound"):
        lax.add(**_fields())
    assert len(lax.records) == 2
    with pytest.raises(ValueError, match="duplicate"):
        read_suite(tmp_path / "dup.json")
    with pytest.warns(DuplicateRecordWarning):
        read_suite(tmp_path / "dup.json", duplicates="warn")
    with pytest.raises(ValueError, match="'error' or 'warn'"):
        RecordWriter("dup", quick=True, out=tmp_path, duplicates="ignore")


def test_round_trip(tmp_path):
    w = RecordWriter("rt", quick=False, out=tmp_path)
    built = [
        BenchRecord.from_dict(_fields()),
        BenchRecord.from_dict(_fields(method="newton-bound", default=True,
                                      metrics={"iterations": 5, "test_accuracy": 0.9})),
        BenchRecord.from_dict(_fields(method="sklearn-lbfgs", peer=True, evaluations=None,
                                      reached=False, time_to_target_s=None)),
    ]
    w.add_record(built[0])
    w.add(**built[1].to_dict())
    w.add(**built[2].to_dict())
    w.set_extra("curves", {"x": np.linspace(0, 1, 3)})
    doc = read_suite(tmp_path / "rt.json")
    assert doc == json.loads(json.dumps(w.to_dict()))
    assert doc["suite"] == "rt" and doc["quick"] is False and "cpu_count" in doc["machine"]
    back = [BenchRecord.from_dict(r) for r in doc["records"]]
    assert back == built
    assert validate_doc(doc) == built
    assert doc["extra"]["curves"] == {"x": [0.0, 0.5, 1.0]}


@pytest.mark.parametrize("mutate, error, message", [
    (lambda d: d.update(recods=[]), ValueError, "unknown keys"),
    (lambda d: d["records"].append(dict(d["records"][0])), ValueError, "duplicate"),
    (lambda d: d.pop("machine"), ValueError, "lacks keys"),
    (lambda d: d.update(quick="yes"), TypeError, "'quick' a bool"),
    (lambda d: d.update(records={}), TypeError, "'records' must be a list"),
    (lambda d: d["records"][0].update(peer=True, default=True), ValueError, "peer"),
])
def test_validate_doc_rejects(tmp_path, mutate, error, message):
    w = RecordWriter("doc", quick=True, out=tmp_path)
    w.add(**_fields(default=True))
    doc = json.loads((tmp_path / "doc.json").read_text())
    mutate(doc)
    with pytest.raises(error, match=message):
        validate_doc(doc, duplicates="error")
