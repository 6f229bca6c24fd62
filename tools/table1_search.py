"""Search preprocessings of the public Adult files for the SPPM paper's Table 1.

The SPPM paper (Salamatian et al., UAI 2014) lists I(A; F) between income and each of
seven public census attributes (Table 1, "before"). This script rebuilds that table
under a grid of preprocessings a reader could reasonably have used, and prints the ones
closest to the paper, plus three checks that hold under every one of them:

* over any top-k alphabet with k <= 300, every profile is US-born, so I(A; Country) = 0
  exactly (the paper: 0.047 bits);
* marital status (or relationship) carries more about income than education, and sex
  more than race (the paper has the reverse in both pairs);
* the whole profile's I(A; B) stays far below the paper's "about 0.5 bits".

The grid here is a representative part of the 8,736 preprocessings of the full search
(docs/studies/faithfulness.md): rows used (adult.data, or .data + .test), missing values (drop
rows with '?', or keep '?' as a value), four age binnings, marital status or
relationship, country as given or US / non-US, counts or fnlwgt weights, the users
inside the top-k profiles (k = 100, 300, 1000, 2000, all), bits or nats.

    python tools/table1_search.py [--data /path/to/adult] [--show 5]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

#: the paper's Table 1, "before" column, bits
PAPER = {"age": 0.1064, "education": 0.1502, "marital": 0.1241, "occupation": 0.1126,
         "race": 0.0192, "sex": 0.0123, "country": 0.0470}
COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income")
AGE_BINS = {
    "decade": lambda a: (a // 10) * 10,
    "decade+5": lambda a: ((a - 5) // 10) * 10 + 5,
    "5-year": lambda a: (a // 5) * 5,
    "paper-like 17-24/25-34/...": lambda a: np.digitize(a, [25, 35, 45, 55, 65]),
}
TOP_K = (100, 300, 1000, 2000, None)


def load(folder: Path, with_test: bool) -> pd.DataFrame:
    """The raw rows, stripped, income as 0/1 (the test file's trailing '.' removed)."""
    files = ["adult.data"] + (["adult.test"] if with_test else [])
    frames = [pd.read_csv(folder / f, header=None, names=COLUMNS, skipinitialspace=True,
                          comment="|", na_values=[]) for f in files]
    df = pd.concat(frames, ignore_index=True).dropna(subset=["income"])
    df["income"] = df["income"].astype(str).str.rstrip(".").eq(">50K").astype(int)
    return df


def mutual_information(a: np.ndarray, f: np.ndarray, w: np.ndarray) -> float:
    """I(A; F) in bits of the weighted empirical joint (A binary)."""
    codes, _ = pd.factorize(f)
    p = np.bincount(codes * 2 + a, weights=w, minlength=2 * (codes.max() + 1)).reshape(-1, 2)
    p = p / p.sum()
    pf, pa = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log2(p[nz] / (pf @ pa)[nz])).sum())


def table(df: pd.DataFrame, age: str, marital: str, country: str, weights: str,
          top_k: int | None) -> tuple[dict[str, float], float]:
    """Per-attribute I(A; F) (bits) and the whole profile's I(A; B) for one preprocessing."""
    f = pd.DataFrame({"age": AGE_BINS[age](df["age"].to_numpy()), "education": df["education"],
                      "marital": df[marital], "occupation": df["occupation"], "race": df["race"],
                      "sex": df["sex"],
                      "country": (df["native-country"] if country == "as given" else
                                  np.where(df["native-country"] == "United-States", "US", "other"))})
    w = df["fnlwgt"].to_numpy(dtype=float) if weights == "fnlwgt" else np.ones(len(df))
    # groups numbered in the order of their values, and a stable sort of the masses: profiles
    # tied at the k-th place are kept in that order, as the census adapter keeps them (a
    # quicksort's tie order differed between machines: 0.3414933 vs the adapter's 0.3421277)
    profile = f.astype(str).groupby(list(f.columns), sort=True).ngroup()
    if top_k is not None:
        mass = pd.Series(w).groupby(profile.to_numpy()).sum().sort_values(ascending=False, kind="stable")
        keep = profile.isin(set(mass.index[:top_k])).to_numpy()
        f, w, a, profile = f[keep], w[keep], df["income"].to_numpy()[keep], profile[keep]
    else:
        a = df["income"].to_numpy()
    per = {name: mutual_information(a, f[name].to_numpy(), w) for name in PAPER}
    return per, mutual_information(a, profile.to_numpy(), w)


def search(folder: Path) -> pd.DataFrame:
    rows = []
    for with_test, missing in itertools.product((False, True), ("drop", "keep")):
        raw = load(folder, with_test)
        if missing == "drop":
            raw = raw[~raw.isin(["?"]).any(axis=1)]
        for age, marital, country, weights, top_k in itertools.product(
                AGE_BINS, ("marital-status", "relationship"), ("as given", "US / other"),
                ("counts", "fnlwgt"), TOP_K):
            per, whole = table(raw, age, marital, country, weights, top_k)
            for unit, scale in (("bits", 1.0), ("nats", math.log(2))):
                values = {k: v * scale for k, v in per.items()}
                rows.append({"rows": ".data+.test" if with_test else ".data", "missing": missing,
                             "age_bins": age, "marital_as": marital, "country_as": country,
                             "weights": weights, "top_k": top_k or "all", "unit": unit,
                             **values, "profile_mi": whole * scale,
                             "max_off": max(abs(values[k] - PAPER[k]) for k in PAPER)})
    return pd.DataFrame(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("PRIVBENCH_DATA_DIR", "../shared/data")
    ap.add_argument("--data", type=Path, default=Path(default) / "adult",
                    help="folder holding adult.data and adult.test (default $PRIVBENCH_DATA_DIR/adult)")
    ap.add_argument("--show", type=int, default=5, help="how many closest preprocessings to print")
    args = ap.parse_args()
    if not (args.data / "adult.data").exists():
        ap.error(f"--data: no adult.data in {args.data}")
    res = search(args.data)
    bits = res[res["unit"] == "bits"]
    pd.set_option("display.width", 200)
    print(f"{len(res)} preprocessings ({len(bits)} in bits); paper's Table 1 (before): {PAPER}")
    print("closest (largest absolute difference over the 7 attributes):")
    cols = ["rows", "missing", "age_bins", "marital_as", "country_as", "weights", "top_k", "unit", *PAPER,
            "max_off"]
    print(res.nsmallest(args.show, "max_off")[cols].round(4).to_string(index=False))
    print(f"within 0.005 of the paper on every attribute: {int((res['max_off'] <= 0.005).sum())}")
    small = bits[bits["top_k"].isin([100, 300])]
    given = small[small["country_as"] == "as given"]
    print(f"I(A; Country) over top-100/300 alphabets, countries as given: at most "
          f"{given['country'].max():.3g} bits (every profile US-born"
          f"{'' if given['country'].max() == 0 else ' NOT always'}); grouped US / other: at most "
          f"{small['country'].max():.3g} (paper 0.047)")
    print(f"marital/relationship > education in {int((bits['marital'] > bits['education']).sum())}"
          f" of {len(bits)}; sex > race in {int((bits['sex'] > bits['race']).sum())} of {len(bits)}")
    print(f"whole-profile I(A; B), top 100-2000, bits: {bits[bits['top_k'] != 'all']['profile_mi'].min():.3f}"
          f" to {bits[bits['top_k'] != 'all']['profile_mi'].max():.3f} (paper: about 0.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
