"""Calibrate contact parameters against an observed landing: approximate Bayesian computation.

A mission analyst observed a landing (the fall time, the time from first contact to rest, the number
of contacts, the distance from first contact to rest, ...), each with an uncertainty, and wants the
contact parameters that explain it, with their spread, and what the landing then predicts. The
simulation has no likelihood in closed form (a lander's bounces depend on its random attitude at
every contact), so the inference is by simulation:

1. **Prior by simulation.** A batch whose scene draws the unknown parameters per sample (the prior:
   ``tumble run deploy -p restitution_range=[0.05,0.9] -p friction_range=[0.2,1.0] ...``) is run
   by the ordinary batch runner into an ordinary store; each sample stores its drawn parameters
   under ``inputs/`` and its outcome under ``final/`` and ``events/``.
2. **ABC with a Gaussian kernel** (:func:`calibrate_arrays`): sample ``s`` gets the weight
   ``w_s ∝ exp(−½ Σ_k ((y_sk − y_k) / σ_k)²)`` from its simulated outcomes ``y_sk`` and the
   observed values ``y_k ± σ_k``. This is importance sampling of the posterior with the prior as
   proposal, and it is exact (not approximate) for the model "simulator plus Gaussian observation
   error of standard deviation σ_k" (Wilkinson 2013); the simulator's own randomness (attitude,
   release) is carried by the samples, not by σ. Samples that could not produce an observable
   (never came to rest, failed) get weight 0 and are counted.
3. **Posterior and prediction.** Weighted mean, standard deviation and credible interval of every
   parameter; the posterior predictive band of every observable: what a *new* landing with the
   inferred parameters does, its own scatter included (:func:`predictive_weights`), beside the
   prior's band; the effective sample size ``ESS = 1/Σw²`` (normalised weights) says
   how many samples carry the result. Below :data:`MIN_ESS` the result is refused as unreliable
   unless asked for, and the message says what to do (more samples, a narrower prior).

The store is read, never written (stores are checked and locked): :func:`write_calibration` puts the
result (``calibration.json``) and its figures beside it.

Observables (:data:`OBSERVABLES`) are defined from a deployment store's records; any scalar
``final/`` output per sample is accepted too, by its name (``probe_slope``).

References: Wilkinson, R. D. (2013), Approximate Bayesian computation (ABC) gives exact results
under the assumption of model error, *Stat. Appl. Genet. Mol. Biol.* 12(2), 129–141; Beaumont, M.
A., Zhang, W. and Balding, D. J. (2002), Approximate Bayesian computation in population genetics,
*Genetics* 162(4), 2025–2035 (docs/references.md).
"""

from __future__ import annotations

import json
import math
import pathlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ecs import InputError
from systems.deployment.records import EVENT_BOUNCE

#: Fewest effective samples a calibration reports without ``allow_few=True``: below it, the
#: credible bounds rest on a handful of samples (their Monte-Carlo error is of the order of the
#: interval itself).
MIN_ESS = 30.0

#: Store status code of a settled sample (``final/status`` flag ``settled``).
_SETTLED = 2


@dataclass(frozen=True)
class Observable:
    """A quantity of a landing that can be observed: unit, meaning, and how to read it per sample."""

    unit: str
    doc: str
    read: Callable[[Any], np.ndarray]


def _final(store, name: str) -> np.ndarray:
    """``final/<name>`` per sample (the first row of an entity axis), float, NaN where missing."""
    a = store["final"][name]
    v = np.asarray(a.values, float)
    while v.ndim > 1:
        v = v[:, 0]
    return v


def _settled(store) -> np.ndarray:
    return np.asarray(store["final"]["status"].values) == _SETTLED


def _bounce_time(store) -> np.ndarray:
    t = _final(store, "probe_settle_time") - _final(store, "probe_first_impact_time")
    return np.where(_settled(store), t, np.nan)


def _contacts(store) -> np.ndarray:
    return np.where(_settled(store), _final(store, "probe_collisions"), np.nan)


def _bounces(store) -> np.ndarray:
    return np.where(_settled(store), _final(store, "probe_bounces"), np.nan)


def _displacement(store) -> np.ndarray:
    """Straight-line distance [m] from the probe's CoM at its first collision to its rest position
    (target frame)."""
    first = np.asarray(store["events"]["position"].values[:, 0, :], float)
    kind = np.asarray(store["events"]["kind"].values[:, 0])
    end = np.asarray(store["final"]["body_position"].values, float)
    end = end[:, 0, :] if end.ndim == 3 else end
    d = np.linalg.norm(end - first, axis=1)
    return np.where(_settled(store) & (kind >= 0), d, np.nan)


#: Smallest hop [m] a flown reconstruction resolves, as the sagitta of the flight (:func:`flights`):
#: the position accuracy of MASCOT's reconstructed descent and bouncing path, ~0.1 m (1σ) over the
#: whole path (Scholten et al. 2019). A flight whose path never leaves the straight line between its
#: two contacts by more than this cannot be told from staying on the ground.
HOP_RESOLUTION = 0.1


def flights(store) -> tuple[np.ndarray, np.ndarray]:
    """The flights of every sample: ``(duration, sagitta)``, each ``(samples, events)``.

    Entry ``[s, j]`` is the flight that follows collision ``j`` of sample ``s`` when that collision
    was a bounce (``events/kind`` 0) and the next collision is logged; NaN elsewhere. The duration
    ``T`` [s] is the time between the two collisions. The sagitta [m] is the largest distance of
    the CoM's path from the straight line between its positions at the two collisions, moving along
    that line at constant speed: in a uniform field ``g`` the path is a parabola and that distance is
    ``|g| T²/8 = |Δv| T/8``, with ``Δv`` the change of the CoM velocity over the flight (the
    ``velocity_before`` of the next collision minus the ``velocity_after`` of this one). Over a hop of
    metres on a small body the field's variation and the Coriolis term change it by parts per thousand
    (``tests/test_validation.py`` compares it with recorded trajectories).

    A flight that starts at a lift-off from contact motion, not at a bounce, is not here: the event
    log records collisions only. Such flights are short: in recorded MASCOT and Hayabusa landings
    (frames of 2 s) the longest lasted 26 s, a sagitta of about 1 cm, where a 0.1 m hop on Ryugu
    takes 85 s (the test checks this bound)."""
    ev = store.get("events") if hasattr(store, "get") else store["events"]
    need = ("time", "kind", "velocity_before", "velocity_after")
    if ev is None or any(k not in ev for k in need):
        raise InputError("store", "events/", f"has no collision records ({', '.join(need)}): flights are read from "
                                             "a deployment's collision events")
    t = np.asarray(ev["time"].values, float)
    bounce = np.asarray(ev["kind"].values)[:, :-1] == EVENT_BOUNCE
    T = t[:, 1:] - t[:, :-1]
    dv = np.asarray(ev["velocity_before"].values, float)[:, 1:] - np.asarray(ev["velocity_after"].values, float)[:, :-1]
    ok = bounce & np.isfinite(T)
    T = np.where(ok, T, np.nan)
    return T, np.linalg.norm(dv, axis=-1) * T / 8.0


def _complete(store) -> np.ndarray:
    """Settled samples whose event log kept every collision."""
    ok = _settled(store)
    if "event_overflow" in store["events"]:
        ok &= np.asarray(store["events"]["event_overflow"].values) == 0
    return ok


def hops(store, min_sagitta: float = HOP_RESOLUTION) -> np.ndarray:
    """Per sample, the flights whose sagitta is at least ``min_sagitta`` [m] (:func:`flights`): the
    bounces a reconstruction that resolves ``min_sagitta`` sees. NaN for samples that did not settle
    or whose event log overflowed."""
    _, h = flights(store)
    n = np.sum(h >= min_sagitta, axis=1).astype(float)
    return np.where(_complete(store), n, np.nan)


def _longest_flight(store) -> np.ndarray:
    T, _ = flights(store)
    longest = np.where(np.isnan(T), -np.inf, T).max(axis=1)
    return np.where(_complete(store) & np.isfinite(longest), longest, np.nan)


#: name -> :class:`Observable` of a deployment store. ``hops>H`` (H in metres) is :func:`hops` at
#: another resolution (:func:`observable`).
OBSERVABLES: dict[str, Observable] = {
    "fall_time": Observable("s", "time from release to the first contact (final/probe_first_impact_time)",
                            lambda st: _final(st, "probe_first_impact_time")),
    "bounce_time": Observable("s", "time from the first contact to rest (settle time - first-contact time; "
                                   "settled samples)", _bounce_time),
    "contacts": Observable("1", "collisions from the first contact to rest, that one included "
                                "(final/probe_collisions; settled samples)", _contacts),
    "bounces": Observable("1", "collisions after which the probe flew again (final/probe_bounces; settled "
                               "samples)", _bounces),
    "displacement": Observable("m", "straight-line distance from the CoM at the first contact to its rest "
                                    "position, target frame (settled samples)", _displacement),
    "path_length": Observable("m", "path length of the CoM in the target frame from release "
                                   "(final/probe_distance)", lambda st: _final(st, "probe_distance")),
    "hops": Observable("1", f"flights after a bounce whose sagitta is at least {HOP_RESOLUTION} m, the bounces "
                            "a reconstruction at that accuracy resolves (settled samples)", hops),
    "longest_flight": Observable("s", "longest flight, from a bounce to the next collision (settled samples)",
                                 _longest_flight),
}


def observable(name: str) -> Observable | None:
    """The :class:`Observable` called ``name``: an :data:`OBSERVABLES` entry, or ``hops>H`` for the
    flights whose sagitta is at least ``H`` metres (``H`` > 0); None for any other name."""
    if name in OBSERVABLES:
        return OBSERVABLES[name]
    if not name.startswith("hops>"):
        return None
    try:
        h = float(name[5:])
    except ValueError:
        raise InputError("observable", name, "hops>H needs a number H, the smallest sagitta resolved [m]") from None
    if not (math.isfinite(h) and h > 0.0):
        raise InputError("observable", name, "hops>H needs a finite H > 0 [m]")
    return Observable("1", f"flights after a bounce whose sagitta is at least {h:g} m (settled samples)",
                      lambda st: hops(st, h))


@dataclass
class Calibration:
    """The result of :func:`calibrate_arrays` / :func:`calibrate` (``to_dict`` is its JSON)."""

    parameters: dict[str, dict[str, float]]
    observables: dict[str, dict[str, Any]]
    samples: int
    usable: int
    ess: float
    credible: float
    weights: np.ndarray = field(repr=False)
    draws: dict[str, np.ndarray] = field(repr=False)
    outcomes: dict[str, np.ndarray] = field(repr=False)
    source: str = ""

    def posterior_draws(self, n: int, seed: int = 0) -> dict[str, np.ndarray]:
        """``n`` parameter sets resampled by weight (inputs for a prediction run)."""
        rng = np.random.default_rng(seed)
        idx = rng.choice(self.weights.size, size=int(n), p=self.weights)
        return {k: v[idx] for k, v in self.draws.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "samples": self.samples, "usable": self.usable, "ess": self.ess,
                "credible": self.credible, "method": "ABC, Gaussian kernel (importance weights w ~ "
                "exp(-0.5 sum ((y_sim - y_obs)/sigma)^2)); Wilkinson 2013",
                "parameters": self.parameters, "observables": self.observables}

    def lines(self) -> list[str]:
        """The result as a short table for a terminal."""
        c = int(round(100 * self.credible))
        out = [f"calibration of {self.source or 'arrays'}: {self.usable} of {self.samples} samples could be "
               f"compared, effective sample size {self.ess:.1f}",
               f"{'parameter':<22}{'posterior mean ± sd':<24}{f'{c} % credible interval':<26}prior range"]
        for k, p in self.parameters.items():
            out.append(f"{k:<22}{p['mean']:<.4g} ± {p['sd']:<12.3g}".ljust(46)
                       + f"[{p['lo']:.4g}, {p['hi']:.4g}]".ljust(26) + f"[{p['prior_min']:.4g}, {p['prior_max']:.4g}]")
        out.append(f"{'observable':<22}{'observed ± sigma':<24}{f'posterior {c} % band':<26}prior {c} % band")
        for k, o in self.observables.items():
            flag = "" if o["inside_posterior_band"] else "   (observed outside the posterior band)"
            out.append(f"{k + ' [' + o['unit'] + ']':<22}{o['observed']:<.4g} ± {o['sigma']:<12.3g}".ljust(46)
                       + f"[{o['posterior_lo']:.4g}, {o['posterior_hi']:.4g}]".ljust(26)
                       + f"[{o['prior_lo']:.4g}, {o['prior_hi']:.4g}]{flag}")
        return out


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q) -> np.ndarray:
    """Quantiles ``q`` (in [0, 1]) of ``values`` under normalised ``weights``: the inverse of the
    weighted empirical CDF, interpolated between the mid-points of each sample's weight
    (numpy's ``quantile(method='linear')`` on equal weights, up to the mid-point convention)."""
    v = np.asarray(values, float)
    w = np.asarray(weights, float)
    keep = w > 0
    v, w = v[keep], w[keep]
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order] / w.sum()
    mid = np.cumsum(w) - 0.5 * w
    return np.interp(np.asarray(q, float), mid, v)


def predictive_weights(draws: dict[str, np.ndarray], w: np.ndarray, *, max_reference: int = 4_000) -> np.ndarray:
    """Weights that turn the batch's outcomes into the posterior predictive distribution.

    The kernel weights ``w`` select samples whose *outcome* matched the observation, so their
    outcomes are the observation's neighbourhood, not what a new landing would do. A new landing
    draws θ from the posterior and then scatters on its own; sample ``s`` (θ_s, y_s) stands for
    that when weighted by the posterior-to-prior density ratio at θ_s. Both densities are Gaussian
    kernel estimates in parameter space (each parameter scaled by its prior standard deviation,
    Scott's bandwidth ``n_eff^(−1/(d+4))`` times the posterior's spread), **leaving sample s out**,
    so that its own outcome never weights itself and ``y_s`` keeps the simulator's independent
    scatter. Each density sums over at most ``max_reference`` samples (beyond: a fixed subsample for
    the prior, systematic resampling by weight for the posterior).
    """
    X = np.column_stack([np.asarray(v, float) for v in draws.values()])
    S, d = X.shape
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    X = X / scale
    ess = 1.0 / float(np.sum(w * w))
    mean = w @ X
    spread = np.sqrt(np.maximum(w @ (X - mean) ** 2, 1e-24))
    h = spread * ess ** (-1.0 / (d + 4))
    ref = np.arange(S) if S <= max_reference else np.sort(np.random.default_rng(0).choice(S, max_reference, False))
    post = np.flatnonzero(w > 1e-9 * w.max())
    wp = w[post]
    if post.size > max_reference:      # systematic resampling: max_reference points of equal weight
        cdf = np.cumsum(wp)
        pick = np.minimum(np.searchsorted(cdf, (np.arange(max_reference) + 0.5) / max_reference * cdf[-1]),
                          post.size - 1)
        post, wp = post[pick], np.full(max_reference, 1.0 / max_reference)
    num = np.zeros(S)
    den = np.zeros(S)
    Xp, Xr = X[post] / h, X[ref] / h
    for a in range(0, S, 512):         # 512 rows at a time: a few tens of MB of kernel values
        Z = X[a:a + 512] / h
        rows = np.arange(a, a + Z.shape[0])[:, None]
        kp = np.exp(-0.5 * ((Z[:, None, :] - Xp[None, :, :]) ** 2).sum(axis=2))
        own = rows == post[None, :]
        self_w = own @ wp                   # weight the sample itself carries in the posterior sum
        kp[own] = 0.0                       # leave sample s out, and renormalise without it
        num[a:a + 512] = (kp @ wp) / np.maximum(1.0 - self_w, 1e-300)
        kr = np.exp(-0.5 * ((Z[:, None, :] - Xr[None, :, :]) ** 2).sum(axis=2))
        own = rows == ref[None, :]
        kr[own] = 0.0
        den[a:a + 512] = kr.sum(axis=1) / np.maximum(ref.size - own.sum(axis=1), 1)
    v = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    total = v.sum()
    return v / total if total > 0 else w


def _check_observed(observed: dict, known: Callable[[str], bool]) -> dict[str, tuple[float, float]]:
    if not observed:
        raise InputError("observed", observed, "name at least one observed quantity: {name: (value, sigma)}")
    out = {}
    for name, vs in observed.items():
        if not known(name):
            raise InputError("observed", name, f"must be one of {sorted(OBSERVABLES)}, hops>H (H in m) or a "
                                                "scalar final/ output of the store")
        try:
            value, sigma = (float(x) for x in vs)
        except (TypeError, ValueError):
            raise InputError(f"observed {name}", vs, "must be (value, sigma)") from None
        if not math.isfinite(value):
            raise InputError(f"observed {name} value", value, "must be finite")
        if not (math.isfinite(sigma) and sigma > 0.0):
            raise InputError(f"observed {name} sigma", sigma, "must be finite and > 0 (the observation's "
                                                             "standard uncertainty, same unit)")
        out[name] = (value, sigma)
    return out


def calibrate_arrays(draws: dict[str, np.ndarray], outcomes: dict[str, np.ndarray],
                     observed: dict[str, tuple[float, float]], *, credible: float = 0.9,
                     units: dict[str, str] | None = None, allow_few: bool = False, source: str = "") -> Calibration:
    """ABC with a Gaussian kernel over a batch (module docstring).

    Args:
        draws: parameter name -> per-sample drawn value (the prior sample), shape (S,).
        outcomes: observable name -> per-sample simulated value, shape (S,) (NaN: not produced).
        observed: observable name -> (observed value, standard uncertainty σ > 0).
        credible: mass of the credible intervals and predictive bands, in (0, 1).
        units: observable name -> unit (for the report).
        allow_few: report even when the effective sample size is below :data:`MIN_ESS`.
    """
    if not (0.0 < float(credible) < 1.0):
        raise InputError("credible", credible, "must be in (0, 1)")
    obs = _check_observed(observed, lambda n: n in outcomes)
    if not draws:
        raise InputError("parameters", "none", "the batch disperses no parameter: draw the unknown ones per sample "
                                               "(the prior), e.g. -p restitution_range=[0.05,0.9]")
    S = len(next(iter(draws.values())))
    for k, v in [*draws.items(), *outcomes.items()]:
        if np.shape(v) != (S,):
            raise InputError(k, np.shape(v), f"must hold one value per sample ({S})")
    logw = np.zeros(S)
    for name, (y, sigma) in obs.items():
        logw += -0.5 * ((np.asarray(outcomes[name], float) - y) / sigma) ** 2
    logw[~np.isfinite(logw)] = -np.inf
    usable = int(np.isfinite(logw).sum())
    if usable == 0:
        raise InputError("observed", sorted(obs), "no sample of the batch produced these observables (none came "
                                                  "to rest, or all failed): nothing to compare")
    w = np.exp(logw - logw.max())
    w /= w.sum()
    ess = float(1.0 / np.sum(w * w))
    if ess < MIN_ESS and not allow_few:
        raise InputError("observed", {k: v for k, v in obs.items()},
                         f"only {ess:.1f} effective samples (of {usable} usable) lie near the observation (at least "
                         f"{MIN_ESS:g} are needed): run more samples, narrow the prior toward the observation, or "
                         "state the uncertainties honestly (a sigma far below the simulator's own scatter leaves "
                         "few matches)")
    a = (1.0 - credible) / 2.0
    params = {}
    for k, v in draws.items():
        v = np.asarray(v, float)
        m = float(np.sum(w * v))
        lo, med, hi = weighted_quantile(v, w, [a, 0.5, 1.0 - a])
        params[k] = {"mean": m, "sd": float(math.sqrt(max(0.0, np.sum(w * (v - m) ** 2)))), "median": float(med),
                     "lo": float(lo), "hi": float(hi), "prior_min": float(v.min()), "prior_max": float(v.max())}
    flat = np.full(S, 1.0)
    pw = predictive_weights(draws, w)
    out = {}
    for name, (y, sigma) in obs.items():
        v = np.asarray(outcomes[name], float)
        ok = np.isfinite(v)
        plo, phi = weighted_quantile(v[ok], flat[ok], [a, 1.0 - a])
        lo, med, hi = weighted_quantile(v[ok], pw[ok], [a, 0.5, 1.0 - a])
        out[name] = {"observed": y, "sigma": sigma, "unit": (units or {}).get(name, ""),
                     "posterior_lo": float(lo), "posterior_median": float(med), "posterior_hi": float(hi),
                     "prior_lo": float(plo), "prior_hi": float(phi), "prior_produced": int(ok.sum()),
                     "inside_posterior_band": bool(lo <= y <= hi)}
    return Calibration(parameters=params, observables=out, samples=S, usable=usable, ess=ess,
                       credible=float(credible), weights=w, draws={k: np.asarray(v, float) for k, v in draws.items()},
                       outcomes={k: np.asarray(outcomes[k], float) for k in obs}, source=source)


#: Axes of vectors and attitudes (``xyz``, ``quat``): a drawn release position or attitude is the
#: simulator's own randomness, not a parameter to infer.
_GEOMETRIC_AXES = ("xyz", "quat")


def store_parameters(store) -> dict[str, np.ndarray]:
    """The per-sample drawn parameters of a store: every scalar ``inputs/`` array and every labelled
    component of one (``contact_terrain`` over ``pair_field``) whose value varies across samples."""
    out = {}
    ds = store["inputs"]
    for name, da in ds.data_vars.items():
        if da.dims == ("sample",) and name != "seed":
            v = np.asarray(da.values, float)
            if np.ptp(v) > 0:
                out[name] = v
        elif len(da.dims) == 2 and da.dims[0] == "sample" and da.dims[1] not in _GEOMETRIC_AXES \
                and da.dims[1] in ds.coords and ds.coords[da.dims[1]].dtype.kind in "OUT":
            for j, lab in enumerate(ds.coords[da.dims[1]].values):
                v = np.asarray(da.values[:, j], float)
                # a component that copies another (e_floor = e_max = restitution without a regolith
                # modulation) is not a parameter of its own
                if np.ptp(v) > 0 and not any(np.array_equal(v, u) for u in out.values()):
                    out[str(lab)] = v
    return out


def open_store_groups(path) -> dict[str, Any]:
    """``{group: xarray.Dataset}`` of a store (final, inputs, events)."""
    import xarray as xr

    p = pathlib.Path(path)
    if not (p / "zarr.json").exists():
        raise InputError("store", str(path), "is not a store written by `tumble run` (no zarr.json)")
    out = {}
    for g in ("final", "inputs", "events"):
        if (p / g).exists():
            out[g] = xr.open_zarr(p, group=g, consolidated=False).load()
    if "final" not in out or "inputs" not in out:
        raise InputError("store", str(path), "has no final/ or inputs/ group: calibrate a finished batch")
    return out


def calibrate(path, observed: dict[str, tuple[float, float]], *, parameters: list[str] | None = None,
              credible: float = 0.9, allow_few: bool = False) -> Calibration:
    """Calibrate the parameters a store's batch drew per sample against an observed landing.

    Args:
        path: a store written by ``tumble run`` whose scene disperses the unknown parameters (its prior).
        observed: ``{observable: (value, sigma)}``; observables are :data:`OBSERVABLES`, ``hops>H``
            (:func:`observable`) or any scalar ``final/`` output of the store, by name.
        parameters: which drawn parameters to report (default: every one that varies,
            :func:`store_parameters`).
        credible, allow_few: see :func:`calibrate_arrays`.
    """
    store = open_store_groups(path)
    final = store["final"]

    def known(name):
        return observable(name) is not None or (name in final and final[name].dims[0] == "sample"
                                       and int(np.prod(final[name].shape[1:])) == 1)

    obs = _check_observed(observed, known)
    done = np.asarray(final["done"].values).astype(bool) if "done" in final else np.ones(final.sizes["sample"], bool)
    outcomes, units = {}, {}
    for name in obs:
        obs_def = observable(name)
        if obs_def is not None:
            v, units[name] = obs_def.read(store), obs_def.unit
        else:
            v, units[name] = _final(store, name), str(final[name].attrs.get("units", ""))
        outcomes[name] = np.where(done, v, np.nan)
    draws = store_parameters(store)
    if parameters is not None:
        missing = [p for p in parameters if p not in draws]
        if missing:
            raise InputError("parameters", missing, f"are not drawn per sample in this store (drawn: {sorted(draws)})")
        draws = {p: draws[p] for p in parameters}
    return calibrate_arrays(draws, outcomes, obs, credible=credible, units=units, allow_few=allow_few,
                            source=str(path))


def write_calibration(cal: Calibration, out_dir) -> list[pathlib.Path]:
    """``calibration.json`` and the figures (posterior marginals against the prior; predictive bands
    against the observation) into ``out_dir``; returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "calibration.json"]
    paths[0].write_text(json.dumps(cal.to_dict(), indent=2) + "\n")
    names = list(cal.draws)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for ax, k in zip(axes[0], names):
        v = cal.draws[k]
        bins = np.linspace(v.min(), v.max(), 31)
        ax.hist(v, bins=bins, density=True, color="0.8", label=f"prior ({v.size} samples)")
        ax.hist(v, bins=bins, weights=cal.weights, density=True, histtype="step", lw=2, color="C0",
                label=f"posterior (ESS {cal.ess:.0f})")
        p = cal.parameters[k]
        ax.axvspan(p["lo"], p["hi"], color="C0", alpha=0.12, label=f"{int(round(100 * cal.credible))} % credible")
        ax.set_xlabel(k)
        ax.set_ylabel("density")
        ax.legend(fontsize=7)
    fig.suptitle("Calibrated parameters: prior (grey) and posterior (blue)")
    fig.tight_layout()
    paths.append(out / "posterior.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    obs = list(cal.observables)
    fig, axes = plt.subplots(1, len(obs), figsize=(3.4 * len(obs), 3.4), squeeze=False)
    for ax, k in zip(axes[0], obs):
        o = cal.observables[k]
        ax.errorbar([0], [o["observed"]], yerr=[o["sigma"]], fmt="ko", capsize=4, label="observed ± σ")
        ax.plot([1, 1], [o["prior_lo"], o["prior_hi"]], color="0.6", lw=8, solid_capstyle="butt", label="prior band")
        ax.plot([2, 2], [o["posterior_lo"], o["posterior_hi"]], color="C0", lw=8, solid_capstyle="butt",
                label="posterior band")
        ax.plot([2], [o["posterior_median"]], "w_", ms=14)
        ax.set_xticks([0, 1, 2], ["observed", "prior", "posterior"])
        ax.set_xlim(-0.6, 2.6)
        ax.set_ylabel(f"{k} [{o['unit']}]" if o["unit"] else k)
        lo = min(o["prior_lo"], o["posterior_lo"], o["observed"] - o["sigma"])
        if lo > 0 and max(o["prior_hi"], o["posterior_hi"]) > 20 * lo:    # bands over decades
            ax.set_yscale("log")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Predictive {int(round(100 * cal.credible))} % bands against the observed landing")
    fig.tight_layout()
    paths.append(out / "predictive.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths
