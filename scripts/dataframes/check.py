"""Load a run's results.csv and samples.jsonl with polars, pandas and DuckDB, as a user would
(default options), and check the column types each of them infers.

    python scripts/dataframes/check.py RUN_DIR

Expected types follow the column's meaning (results.csv, see src/report/csv.rs):
  text     unit_id trace_id variant eval sample status error_kind error_message, string params
  integer  repeat latency_ms tokens tokens.* compactions.*, integer params
  float    cost cost.*, every score column <eval>.<key> and <eval>.pass, float params
  boolean  passed, boolean params
A parameter's kind is taken from samples.jsonl (the JSON types of its values). A column that is
empty in every row carries no type and is only reported. Exit 0 when every column has its
type in every library; 1 with one line per mismatch otherwise.
"""

import json
import sys
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl

TEXT = {"unit_id", "trace_id", "variant", "eval", "sample", "status", "error_kind", "error_message"}
INTEGER = {"repeat", "latency_ms", "tokens"}

# What each library calls each kind (a nullable or default dtype both count).
KINDS = {
    "polars": {
        "text": {"String"},
        "integer": {"Int64"},
        "float": {"Float64"},
        "boolean": {"Boolean"},
    },
    "pandas": {
        "text": {"str", "string", "object"},
        "integer": {"int64", "Int64"},
        "float": {"float64", "Float64"},
        # pandas keeps a bool column with missing cells as object unless asked for nullable types
        "boolean": {"bool", "boolean"},
    },
    "duckdb": {
        "text": {"VARCHAR"},
        "integer": {"BIGINT"},
        "float": {"DOUBLE"},
        "boolean": {"BOOLEAN"},
    },
}


def param_kinds(samples):
    kinds = {}
    for s in samples:
        for k, v in s.get("params", {}).items():
            if v is None:
                continue
            kind = (
                "boolean" if isinstance(v, bool)
                else "integer" if isinstance(v, int)
                else "float" if isinstance(v, float)
                else "text"
            )
            prev = kinds.get(k)
            if prev is None or prev == kind:
                kinds[k] = kind
            elif {prev, kind} == {"integer", "float"}:
                kinds[k] = "float"
            else:
                kinds[k] = "text"
    return kinds


def expected_kind(col, params):
    if col in TEXT:
        return "text"
    if col == "passed":
        return "boolean"
    if col in INTEGER or col.startswith(("tokens.", "compactions.")):
        return "integer"
    if col == "cost" or col.startswith("cost."):
        return "float"
    if col.startswith("params."):
        return params.get(col[len("params."):], "text")
    if "." in col:  # <eval>.<score>
        return "float"
    return None


def main(run_dir):
    run = Path(run_dir)
    csv_path, jsonl_path = run / "results.csv", run / "samples.jsonl"
    samples = [json.loads(line) for line in jsonl_path.read_text().splitlines() if line.strip()]
    params = param_kinds(samples)
    problems = []

    # --- results.csv ---------------------------------------------------------------------
    pl_df = pl.read_csv(csv_path)
    pd_df = pd.read_csv(csv_path, dtype_backend="numpy_nullable")
    pd_plain = pd.read_csv(csv_path)
    db = duckdb.sql(f"DESCRIBE SELECT * FROM read_csv_auto('{csv_path}')").fetchall()
    inferred = {
        "polars": {c: str(t) for c, t in pl_df.schema.items()},
        "pandas": {c: str(t) for c, t in pd_df.dtypes.items()},
        "duckdb": {row[0]: row[1] for row in db},
    }
    all_null = {c for c in pl_df.columns if pl_df[c].null_count() == pl_df.height}
    if any(c.startswith("scores.") for c in pl_df.columns):
        problems.append("results.csv: bare `scores.*` columns (scores must be namespaced by eval)")
    for needed in ("tokens", "cost"):
        if needed not in pl_df.columns:
            problems.append(f"results.csv: no `{needed}` column")
    checked = 0
    for col in pl_df.columns:
        kind = expected_kind(col, params)
        if kind is None:
            problems.append(f"results.csv: column `{col}` has no known kind")
            continue
        if col in all_null:
            print(f"note: `{col}` is empty in every row (no type to check)")
            continue
        for lib, types in inferred.items():
            got = types.get(col)
            if got not in KINDS[lib][kind]:
                problems.append(f"results.csv: {lib} reads `{col}` as {got}, expected {kind}")
        checked += 1
    # Default pandas options: numbers must still be numbers (no object columns of digits).
    for col in pd_plain.columns:
        kind = expected_kind(col, params)
        if col not in all_null and kind in ("integer", "float"):
            got = str(pd_plain[col].dtype)
            if got not in ("int64", "float64"):
                problems.append(f"results.csv: pandas (default options) reads `{col}` as {got}")

    # --- samples.jsonl -------------------------------------------------------------------
    nd = pl.read_ndjson(jsonl_path)
    def pl_fields(col):
        return {f.name: str(f.dtype) for f in nd.schema[col].fields} if col in nd.schema else {}
    jsonl_expect = [("scores", "float"), ("cost_usd", "float"), ("compactions", "integer")]
    for col, kind in jsonl_expect:
        for name, got in pl_fields(col).items():
            if got not in KINDS["polars"][kind]:
                problems.append(f"samples.jsonl: polars reads `{col}.{name}` as {got}, expected {kind}")
    for role in nd.schema["tokens"].fields if "tokens" in nd.schema else []:
        for f in role.dtype.fields:
            if str(f.dtype) not in KINDS["polars"]["integer"]:
                problems.append(
                    f"samples.jsonl: polars reads `tokens.{role.name}.{f.name}` as {f.dtype}, expected integer"
                )
    for col, kind in [("repeat", "integer"), ("latency_ms", "integer"), ("passed", "boolean")]:
        got = str(nd.schema.get(col))
        if got not in KINDS["polars"][kind]:
            problems.append(f"samples.jsonl: polars reads `{col}` as {got}, expected {kind}")

    src = f"read_json_auto('{jsonl_path}')"
    for col, kind in jsonl_expect + [("tokens.agent", "integer"), ("tokens.summarizer", "integer"),
                                     ("tokens.judge", "integer"), ("tokens.eval_agent", "integer")]:
        rows = duckdb.sql(f"DESCRIBE SELECT unnest({col}) FROM {src}").fetchall()
        for name, got, *_ in rows:
            if got not in KINDS["duckdb"][kind]:
                problems.append(f"samples.jsonl: duckdb reads `{col}.{name}` as {got}, expected {kind}")
    for col, kind in [("repeat", "integer"), ("latency_ms", "integer"), ("passed", "boolean")]:
        got = duckdb.sql(f"DESCRIBE SELECT {col} FROM {src}").fetchall()[0][1]
        if got not in KINDS["duckdb"][kind]:
            problems.append(f"samples.jsonl: duckdb reads `{col}` as {got}, expected {kind}")

    pj = pd.read_json(jsonl_path, lines=True)
    flat = pd.json_normalize(pj[["scores", "tokens", "cost_usd"]].to_dict("records"))
    for col in flat.columns:
        kind = "integer" if col.startswith("tokens.") else "float"
        got = str(flat[col].dtype)
        if got not in KINDS["pandas"][kind]:
            problems.append(f"samples.jsonl: pandas reads `{col}` as {got}, expected {kind}")
    for col in ("repeat", "latency_ms"):
        got = str(pj[col].dtype)
        if got not in KINDS["pandas"]["integer"]:
            problems.append(f"samples.jsonl: pandas reads `{col}` as {got}, expected integer")

    for p in problems:
        print(p)
    print(
        f"checked {checked} columns of results.csv ({pl_df.height} rows) and {len(samples)} samples "
        f"with polars {pl.__version__}, pandas {pd.__version__}, duckdb {duckdb.__version__}: "
        + ("OK" if not problems else f"{len(problems)} problem(s)")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
