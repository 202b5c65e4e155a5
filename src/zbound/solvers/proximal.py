"""Proximal methods: objectives with an L1 or elastic-net penalty (non-smooth, separable).

``"bound-cd"`` (:class:`BoundCD`, the library's): bound majorization with coordinate-descent
inner solves on a softmax regression (:class:`~zbound.models.base.SoftmaxData`). One pass
visits the free classes in turn; for class c, with the other classes' scores fixed, the loss
of row t is log(e^{S_tc} + C_t) - y_tc S_tc = softplus(u_t) + const - y_tc S_tc with
u_t = S_tc - log C_t: a two-configuration partition function, whose Alg. 1 bound (the
Jaakkola-Jordan bound) majorizes it with curvature a_t = s_t tanh(u_t / 2) / (2 u_t) around the
current point. The class's step minimizes that quadratic plus the penalty, a weighted elastic
net, by coordinate descent (:mod:`zbound.solvers._cd_kernels`) over a working set: the class's
nonzero coefficients and the coordinates that violate the optimality conditions most, at
least ``ws_start`` and twice the nonzeros. The bound touches the loss at the current point and
lies above it everywhere, and every coordinate step lowers the bound plus the penalty, so the
objective never rises. Binary logistic regression (one free class against a reference class)
is one class per pass.

``"fista"`` (:class:`FISTA`): accelerated proximal gradient with backtracking on the Lipschitz
estimate and restart when the objective rises, on any objective whose smooth part has a
gradient: the baseline.

Both stop when the largest KKT violation (the distance from minus the smooth part's gradient
to the penalty's subdifferential, :meth:`~zbound.models.objective.Objective.violation`) is at
most ``tol`` times its scale, the largest entry of the loss's gradient at zero (the L1
strength above which every coefficient is zero: so ``tol`` means the same at every C and
sample count), and report the ratio as ``Result.info["kkt_violation"]`` (the scale as
``"kkt_scale"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions

from zbound.models.base import SoftmaxData
from zbound.models.penalty import kkt_violation
from zbound.solvers import _cd_kernels as K
from zbound.solvers.base import MethodInfo, Solver, State, register
from zbound.solvers.linesearch import armijo_search
from zbound.solvers.result import Status
from zbound.utils.logspace import logsumexp
from zbound.utils.validation import NON_NEGATIVE_INT, POSITIVE, POSITIVE_INT, Choices


def _jj(u: np.ndarray) -> np.ndarray:
    """tanh(u / 2) / (2 u), 1/4 at u = 0: the curvature of the Jaakkola-Jordan bound on
    log(1 + e^u) at u."""
    out = np.full_like(u, 0.25)
    big = np.abs(u) > 1e-4
    ub = u[big]
    out[big] = np.tanh(0.5 * ub) / (2.0 * ub)
    small = ~big
    out[small] -= u[small] ** 2 / 48.0
    return out


def _strengths(model) -> tuple[np.ndarray, np.ndarray]:
    """(l1, l2) per coordinate: the objective's separable penalties summed (an
    ElasticNetPenalty's two parts, an L2Penalty's strengths into l2)."""
    p = model.n_params
    l1, l2 = np.zeros(p), np.zeros(p)
    for pen in getattr(model, "penalties", ()):
        if hasattr(pen, "l1"):
            a, b = pen.strengths(p)
            l1 += a
            l2 += b
        else:
            l2 += np.broadcast_to(pen.strength, (p,))
    return l1, l2


class _KKTStop:
    """The proximal methods' stopping tests: the target, the relative KKT violation (the
    measure ``stationarity`` returns) at most ``tol``, or an objective change in
    [0, ftol max(1, |f|)]."""

    def stop_status(self, state, stat):
        if self.target is not None and state.f <= self.target:
            return Status.TARGET
        if stat <= self.tol:
            return Status.STATIONARY
        if self.ftol > 0.0 and state.f_prev is not None and \
                0.0 <= state.f_prev - state.f <= self.ftol * max(1.0, abs(state.f)):
            return Status.FTOL
        return None


@dataclass
class BoundCDState(State):
    """bound-cd's state: the scores of every class, the smooth gradient's KKT violations, the
    working-set sizes and the coordinate-descent epochs run."""

    S: np.ndarray | None = None
    viol: np.ndarray | None = None
    violation: float = math.inf
    ws_size: np.ndarray | None = None
    epochs: int = 0
    bound_steps: int = 0
    data: dict = field(default_factory=dict)


@register
class BoundCD(_KKTStop, Solver):
    """Bound majorization with coordinate-descent inner solves and working sets, for softmax
    regression with an L1 / elastic-net penalty (the module text). Options: ``max_epochs``
    (coordinate-descent epochs per class and pass), ``ws_start`` (the smallest working set),
    ``inner_ratio`` (an inner solve stops at that multiple of the outer violation: a
    loose inner solve is cheaper than another pass),
    ``curvature``: "newton" (the default: each class's step first on the Hessian's weights
    s_t p_t (1 - p_t), kept when the objective does not rise, else taken again on the bound's)
    or "bound" (the bound's weights only: plain majorization, Alg. 2's scheme)."""

    info = MethodInfo("bound-cd", peer=False, constraints="none", uses_bound=True,
                      needs=("value",), requires=SoftmaxData, proximal=True,
                      separable=True,
                      description="bound majorization (Alg. 1 per class) with coordinate-"
                                  "descent inner solves on working sets; L1 / elastic net")
    options = {"max_epochs": 200, "ws_start": 10, "inner_ratio": 3.0, "curvature": "newton",
               "anderson": 5}
    option_constraints = {"max_epochs": [POSITIVE_INT], "ws_start": [POSITIVE_INT],
                          "anderson": [NON_NEGATIVE_INT],
                          "inner_ratio": [POSITIVE],
                          "curvature": [StrOptions(Choices("newton", "bound"))]}

    # ------------------------------------------------------------------ data
    def _data(self, model) -> dict:
        loss = model.loss
        X = loss.X
        n, nf = X.shape
        d, k, free = loss.d, loss.k, loss.free
        l1, l2 = _strengths(model)
        sw = np.ones(n) if loss.sample_weight is None else np.asarray(loss.sample_weight,
                                                                       dtype=np.float64)
        Y = np.zeros((n, loss.n_classes))
        Y[np.arange(n), loss.y] = 1.0
        if sp.issparse(X):
            Xc = sp.csc_matrix(X, dtype=np.float64)
            Xc.sort_indices()
            cols = (Xc.indptr.astype(np.int64), Xc.indices.astype(np.int64), Xc.data)
            dense = None
        else:
            Xc, cols = None, None
            dense = np.asfortranarray(X, dtype=np.float64)
        return {"X": X, "dense": dense, "cols": cols, "csc": Xc, "n": n, "nf": nf, "d": d,
                "k": k, "binary": free == 1 and k == 1,
                "free": free, "fit_intercept": loss.fit_intercept, "sw": sw, "Y": Y,
                "l1": l1.reshape(k, d), "l2": l2.reshape(k, d)}

    def _scores(self, D, theta) -> np.ndarray:
        W = theta.reshape(D["k"], D["d"])
        nf = D["nf"]
        S = np.zeros((D["n"], D["k"] + D["free"]))
        S[:, D["free"]:] = np.asarray(D["X"] @ W[:, :nf].T)
        if D["fit_intercept"]:
            S[:, D["free"]:] += W[:, nf]
        return S

    @staticmethod
    def _loss(D, S, probabilities: bool = False):
        """The data term sum_t s_t (log-sum-exp(S_t) - S_{t, y_t}) and, with
        ``probabilities``, the free classes' probabilities (n, k); two classes with a
        reference class by log(1 + e^z) = max(z, 0) + log1p(e^-|z|) on the one free score."""
        sw, Y = D["sw"], D["Y"]
        if D["binary"]:
            z = S[:, 1]
            f = float(sw @ (np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))) - Y[:, 1] * z))
            if not probabilities:
                return f
            return f, (0.5 * (1.0 + np.tanh(0.5 * z)))[:, None]
        if not probabilities:
            return float(sw @ (logsumexp(S, axis=1) - np.einsum("ij,ij->i", S, Y)))
        lse, E, Z = logsumexp(S, axis=1, return_exp=True)
        f = float(sw @ (lse - np.einsum("ij,ij->i", S, Y)))
        return f, (E / Z)[:, D["free"]:]

    def _evaluate(self, D, S, theta):
        """(objective, smooth gradient (k, d), per-coordinate KKT violations (k, d))."""
        sw, Y = D["sw"], D["Y"]
        f, P = self._loss(D, S, probabilities=True)
        W = theta.reshape(D["k"], D["d"])
        l1, l2 = D["l1"], D["l2"]
        f += float(np.sum(l1 * np.abs(W)) + 0.5 * np.sum(l2 * W * W))
        R = sw[:, None] * (P - Y[:, D["free"]:])
        G = np.empty((D["k"], D["d"]))
        nf = D["nf"]
        G[:, :nf] = np.asarray(D["X"].T @ R).T
        if D["fit_intercept"]:
            G[:, nf] = R.sum(axis=0)
        viol = kkt_violation(W, G, l1, l2)
        return f, G, viol

    # ------------------------------------------------------------------ protocol
    def init(self, model, x):
        D = self._data(model)
        S = self._scores(D, x)
        f, G, viol = self._evaluate(D, S, x)
        model.count("value_and_grad")
        zero = np.zeros_like(x)
        G0 = G if not x.any() else self._evaluate(D, self._scores(D, zero), zero)[1]
        D["scale"] = max(float(np.abs(G0[:, :D["nf"]]).max()) if D["nf"] else 0.0, 1e-300)
        ws = np.full(D["k"], int(self.opts["ws_start"]), dtype=np.int64)
        return BoundCDState(x, f, G.ravel(), S=S, viol=viol, violation=float(viol.max()),
                            ws_size=ws, data=D)

    def _working_set(self, state, c: int, W: np.ndarray) -> np.ndarray:
        D = state.data
        nf = D["nf"]
        v = state.viol[c, :nf]
        nz = np.flatnonzero(W[c, :nf])
        size = max(int(state.ws_size[c]), 2 * nz.size)
        state.ws_size[c] = size
        cand = np.flatnonzero(v > 0.0)
        if cand.size > size:
            cand = cand[np.argpartition(-v[cand], size - 1)[:size]]
        return np.union1d(nz, cand).astype(np.int64)

    def _class_step(self, state, c, W, r, a, ws):
        """Coordinate descent for class c on the quadratic (r, a) over ``ws``, from W[c]:
        (new coefficients, new intercept, the change of the scores xi). Every
        ``anderson`` epochs the last iterates are extrapolated (Anderson acceleration, as
        skglm does), kept where the quadratic plus penalty is lower there."""
        D = state.data
        n, nf = D["n"], D["nf"]
        h = np.zeros(nf)
        w = W[c, :nf].copy()
        b = np.array([W[c, nf]]) if D["fit_intercept"] else np.zeros(1)
        xi = np.zeros(n)
        l1, l2 = D["l1"][c, :nf].copy(), D["l2"][c, :nf].copy()
        dense = D["dense"]
        if dense is not None:
            K.column_sq_dense(dense, ws, a, h)
        else:
            K.column_sq_csc(*D["cols"], ws, a, h)
        hmax = max(float(h[ws].max()) if ws.size else 0.0, float(a.sum()), 1e-300)
        tol_in = float(self.opts["inner_ratio"]) * state.violation / math.sqrt(hmax)
        fi = D["fit_intercept"]
        budget = int(self.opts["max_epochs"])
        m = int(self.opts["anderson"])
        chunk = m if m > 0 else budget
        hist, Xws = [], None
        while budget > 0:
            run = min(chunk, budget)
            if dense is not None:
                ep = K.sweeps_dense(dense, ws, w, h, l1, l2, r, a, xi, b, fi, run, tol_in)
            else:
                ep = K.sweeps_csc(*D["cols"], ws, w, h, l1, l2, r, a, xi, b, fi, run, tol_in)
            state.epochs += int(ep)
            budget -= int(ep)
            if ep < run or m <= 0 or ws.size == 0:
                break
            hist.append(np.append(w[ws], b[0]))
            if len(hist) == m + 1:
                if Xws is None:
                    Xws = dense[:, ws] if dense is not None else D["csc"][:, ws]
                self._extrapolate(hist, ws, w, b, xi, Xws, r, a, l1, l2, fi)
                hist = [np.append(w[ws], b[0])]
        return w, b[0], xi

    @staticmethod
    def _extrapolate(hist, ws, w, b, xi, Xws, r, a, l1, l2, fi) -> bool:
        """Anderson extrapolation of the iterates ``hist`` (working-set coefficients and
        intercept), applied in place where it lowers the class's quadratic plus penalty."""
        H = np.array(hist)
        U = np.diff(H, axis=0)
        try:
            z = np.linalg.solve(U @ U.T + 1e-12 * np.eye(U.shape[0]) * max(1.0, np.trace(
                U @ U.T)), np.ones(U.shape[0]))
        except np.linalg.LinAlgError:
            return False
        if not np.isfinite(z).all() or z.sum() == 0.0:
            return False
        cand = (z / z.sum()) @ H[1:]
        cur = H[-1]
        delta = cand - cur
        if not np.isfinite(delta).all():
            return False
        xi_c = xi + np.asarray(Xws @ delta[:-1]).ravel() + (delta[-1] if fi else 0.0)

        def q(x, v):
            return float(r @ x + 0.5 * (a * x) @ x + l1[ws] @ np.abs(v[:-1])
                         + 0.5 * (l2[ws] * v[:-1]) @ v[:-1])

        if q(xi_c, cand) < q(xi, cur):
            w[ws] = cand[:-1]
            if fi:
                b[0] = cand[-1]
            xi[:] = xi_c
            return True
        return False

    def _objective_with(self, D, S, W, c, col, w, b, xi) -> float:
        """The objective with class c's coefficients (w, b) and scores S[:, col] + xi."""
        old = S[:, col].copy()
        S[:, col] += xi
        f = self._loss(D, S)
        S[:, col] = old
        keep = W[c].copy()
        W[c, :D["nf"]] = w
        if D["fit_intercept"]:
            W[c, D["nf"]] = b
        f += float(np.sum(D["l1"] * np.abs(W)) + 0.5 * np.sum(D["l2"] * W * W))
        W[c] = keep
        return f

    def _line_search(self, model, D, S, W, c, col, r, w, b, xi, f_cur):
        """The Newton step's length t (1, 1/2, ..., 2^-12) by Armijo's rule on the objective
        (the scores are linear in t, so each trial costs one log-sum-exp over the rows):
        (w, b, xi, objective) at the accepted length, None where no length descends."""
        nf = D["nf"]
        w0, b0 = W[c, :nf], (W[c, nf] if D["fit_intercept"] else 0.0)
        dw, db = w - w0, b - b0
        l1, l2 = D["l1"][c, :nf], D["l2"][c, :nf]
        pen = lambda v: float(l1 @ np.abs(v) + 0.5 * (l2 * v) @ v)   # noqa: E731
        delta = float(r @ xi) + pen(w) - pen(w0)
        if not delta < 0.0:
            return None

        def trial(t):
            f_t = self._objective_with(D, S, W, c, col, w0 + t * dw, b0 + t * db, t * xi)
            model.count("value")
            return f_t, None

        found = armijo_search(trial, f_cur, delta, 1.0, shrink="halve", trials=13)
        if found is None:
            return None
        t, f_t, _ = found
        return w0 + t * dw, b0 + t * db, t * xi, f_t

    def update(self, model, state):
        D = state.data
        free = D["free"]
        theta = state.x.copy()
        W = theta.reshape(D["k"], D["d"])
        S, sw, Y = state.S, D["sw"], D["Y"]
        newton = self.opts["curvature"] == "newton"
        f_cur = state.f
        for c in range(D["k"]):
            col = c + free
            u = S[:, col] if D["binary"] else \
                S[:, col] - logsumexp(np.delete(S, col, axis=1), axis=1)
            p = 0.5 * (1.0 + np.tanh(0.5 * u))                  # expit, overflow-free
            r = sw * (p - Y[:, col])
            ws = self._working_set(state, c, W)
            step = None
            if newton:          # the Hessian's weights p (1 - p), with a line search
                w, b, xi = self._class_step(state, c, W, r, sw * p * (1.0 - p), ws)
                step = self._line_search(model, D, S, W, c, col, r, w, b, xi, f_cur)
                if step is None:
                    state.bound_steps += 1
            if step is None:    # the bound's weights: the step cannot raise the objective
                w, b, xi = self._class_step(state, c, W, r, sw * _jj(u), ws)
                model.count("bound")
                step = (w, b, xi, None)
            w, b, xi, f_new = step
            W[c, :D["nf"]] = w
            if D["fit_intercept"]:
                W[c, D["nf"]] = b
            S[:, col] += xi
            if f_new is not None:
                f_cur = f_new
        f, G, viol = self._evaluate(D, S, theta)
        model.count("value_and_grad")
        if not math.isfinite(f):
            state.status = Status.FAILED
            state.message = "the objective became non-finite"
            return
        state.viol, state.violation = viol, float(viol.max())
        self.accept(model, state, theta, f, G.ravel())

    def stationarity(self, model, state):
        return state.violation / state.data["scale"]

    def result_info(self, state):
        return {"kkt_violation": state.violation / state.data["scale"],
                "kkt_scale": state.data["scale"], "cd_epochs": state.epochs,
                "bound_steps": state.bound_steps,
                "working_set": state.ws_size.tolist(),
                "nonzeros": int(np.count_nonzero(
                    state.x.reshape(state.data["k"], state.data["d"])[:, :state.data["nf"]]))}


@dataclass
class FistaState(State):
    """FISTA's state: the extrapolated point, its smooth value and gradient, the momentum and
    the Lipschitz estimate."""

    y: np.ndarray | None = None
    fy: float = 0.0
    gy: np.ndarray | None = None
    t: float = 1.0
    L: float = 1.0
    violation: float = math.inf
    total: float = 1.0           # the violation's scale: the largest gradient entry at zero


@register
class FISTA(_KKTStop, Solver):
    """Accelerated proximal gradient (Beck & Teboulle 2009) with backtracking (the Lipschitz
    estimate doubles until the quadratic upper bound holds, and may shrink by ``shrink``
    after an accepted step) and a restart when the objective rises (O'Donoghue & Candes
    2015). The stopping measure is the gradient mapping L ||x+ - y||_inf, a bound on the KKT
    violation at the step."""

    info = MethodInfo("fista", peer=True, constraints="none", proximal=True,
                      needs=("smooth_value_and_grad", "prox"),
                      description="accelerated proximal gradient with backtracking and "
                                  "restart (L1 / elastic net baseline)")
    options = {"shrink": 0.9}
    option_constraints = {"shrink": [POSITIVE]}

    def init(self, model, x):
        fs, g = model.smooth_value_and_grad(x)
        f = fs + model.nonsmooth_value(x)
        g0 = g if not x.any() else model.smooth_value_and_grad(np.zeros_like(x))[1]
        total = max(float(np.abs(g0).max()), 1e-300)
        return FistaState(x, f, g, y=x.copy(), fy=fs, gy=g, t=1.0,
                          L=max(float(np.abs(g).max()), 1.0), total=total)

    def update(self, model, state):
        y, fy, gy = state.y, state.fy, state.gy
        L = state.L
        for _ in range(60):
            x_new = model.prox(y - gy / L, 1.0 / L)
            d = x_new - y
            fs_new, g_new = model.smooth_value_and_grad(x_new)
            if fs_new <= fy + float(gy @ d) + 0.5 * L * float(d @ d) + 1e-12 * abs(fy):
                break
            L *= 2.0
        else:
            state.status = Status.LINE_SEARCH_FAILED
            return
        state.violation = L * float(np.abs(d).max())
        f_new = fs_new + model.nonsmooth_value(x_new)
        x_old = state.x
        if f_new > state.f:                         # restart the momentum
            state.t = 1.0
            state.y, state.fy, state.gy = x_old.copy(), *model.smooth_value_and_grad(x_old)
            state.L = L
            state.nit += 1
            return
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * state.t * state.t))
        y_new = x_new + ((state.t - 1.0) / t_new) * (x_new - x_old)
        state.t = t_new
        state.L = L * float(self.opts["shrink"])
        fy_new, gy_new = model.smooth_value_and_grad(y_new)
        state.y, state.fy, state.gy = y_new, fy_new, gy_new
        self.accept(model, state, x_new, f_new, g_new)

    def stationarity(self, model, state):
        return state.violation / state.total

    def result_info(self, state):
        return {"kkt_violation": state.violation / state.total, "kkt_scale": state.total,
                "lipschitz": state.L}
