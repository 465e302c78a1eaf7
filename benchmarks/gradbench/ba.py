"""GradBench's ba (evals/ba, ADBench's bundle adjustment), from cpp/gradbench/evals/ba.hpp.

The objective gives the reprojection errors (2 per observation) and the weight errors.
The eval asks for their sparse Jacobian: each observation's two residuals depend on its
camera (11), its point (3) and its weight only.  A gradient tool gets every 2 x 15 block
at once from two reverse sweeps over the parameters *gathered per observation*
(``cams[obs[:, 0]]``...): the gradient of ``sum_i r_i[comp]`` w.r.t. observation ``i``'s
copy is row ``comp`` of block ``i`` (seed colouring).  ``ba_hand`` writes the same blocks
from a hand-written adjoint of ``project``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=False)
def rodrigues_rotate_point(rot, pt):
    """Rotate pt by the angle-axis vector rot; returns the three coordinates."""
    sqtheta = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2]
    if sqtheta != 0.0:
        theta = math.sqrt(sqtheta)
        costheta = math.cos(theta)
        sintheta = math.sin(theta)
        w0 = rot[0] / theta
        w1 = rot[1] / theta
        w2 = rot[2] / theta
        c0 = w1 * pt[2] - w2 * pt[1]
        c1 = w2 * pt[0] - w0 * pt[2]
        c2 = w0 * pt[1] - w1 * pt[0]
        tmp = (w0 * pt[0] + w1 * pt[1] + w2 * pt[2]) * (1.0 - costheta)
        return (pt[0] * costheta + c0 * sintheta + w0 * tmp,
                pt[1] * costheta + c1 * sintheta + w1 * tmp,
                pt[2] * costheta + c2 * sintheta + w2 * tmp)
    return (pt[0] + rot[1] * pt[2] - rot[2] * pt[1],
            pt[1] + rot[2] * pt[0] - rot[0] * pt[2],
            pt[2] + rot[0] * pt[1] - rot[1] * pt[0])


@njit(cache=False)
def project(cam, X):
    """Pinhole projection with radial distortion of point X by camera cam (11 params)."""
    xo = np.empty(3)
    for j in range(3):
        xo[j] = X[j] - cam[3 + j]
    x0, x1, x2 = rodrigues_rotate_point(cam[0:3], xo)
    p0 = x0 / x2
    p1 = x1 / x2
    rsq = p0 * p0 + p1 * p1
    L = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
    return p0 * L * cam[6] + cam[7], p1 * L * cam[6] + cam[8]


def ba_objective(cams, X, w, obs, feats):
    """Reprojection errors (p x 2) and weight errors (p) of evals/ba."""
    p = obs.shape[0]
    reproj = np.empty((p, 2))
    w_err = np.empty(p)
    for i in range(p):
        u, v = project(cams[obs[i, 0]], X[obs[i, 1]])
        reproj[i, 0] = w[i] * (u - feats[i, 0])
        reproj[i, 1] = w[i] * (v - feats[i, 1])
        w_err[i] = 1.0 - w[i] * w[i]
    return reproj, w_err


def ba_residual_sum(cams_g, X_g, w, feats, comp):
    """sum_i r_i[comp] over observations whose camera and point are gathered rows."""
    total = 0.0
    for i in range(w.shape[0]):
        u, v = project(cams_g[i], X_g[i])
        if comp == 0:
            total += w[i] * (u - feats[i, 0])
        else:
            total += w[i] * (v - feats[i, 1])
    return total


def gather(cams, X, obs):
    """Each observation's own copy of its camera and point."""
    return np.ascontiguousarray(cams[obs[:, 0]]), np.ascontiguousarray(X[obs[:, 1]])


def jacobian_blocks(grad_fn, cams, X, w, obs, feats):
    """(J (p, 2, 15), dw_err (p)) from a gradient of :func:`ba_residual_sum`."""
    cams_g, X_g = gather(cams, X, obs)
    p = obs.shape[0]
    J = np.empty((p, 2, 15))
    for comp in (0, 1):
        dc, dx, dw = grad_fn(cams_g, X_g, w, feats, comp)
        J[:, comp, :11] = dc
        J[:, comp, 11:14] = dx
        J[:, comp, 14] = dw
    return J, -2.0 * w


@njit(cache=False)
def _rodrigues_adj(rot, xo, dx0, dx1, dx2, dcam):
    """Reverse sweep of rodrigues_rotate_point (non-zero angle) for cotangent dx of the
    rotated point: writes d rot into dcam[0:3], returns d xo."""
    r0, r1, r2 = rot[0], rot[1], rot[2]
    sqtheta = r0 * r0 + r1 * r1 + r2 * r2
    theta = math.sqrt(sqtheta)
    ct, st = math.cos(theta), math.sin(theta)
    w0, w1, w2 = r0 / theta, r1 / theta, r2 / theta
    c0 = w1 * xo[2] - w2 * xo[1]
    c1 = w2 * xo[0] - w0 * xo[2]
    c2 = w0 * xo[1] - w1 * xo[0]
    dot = w0 * xo[0] + w1 * xo[1] + w2 * xo[2]
    tmp = dot * (1.0 - ct)
    # x_j = xo_j ct + c_j st + w_j tmp
    dct = dx0 * xo[0] + dx1 * xo[1] + dx2 * xo[2]
    dst = dx0 * c0 + dx1 * c1 + dx2 * c2
    dtmp = dx0 * w0 + dx1 * w1 + dx2 * w2
    dxo0, dxo1, dxo2 = dx0 * ct, dx1 * ct, dx2 * ct
    dw0, dw1, dw2 = dx0 * tmp, dx1 * tmp, dx2 * tmp
    # c = w x xo
    dw1 += dx0 * st * xo[2] - dx2 * st * xo[0]
    dw2 += dx1 * st * xo[0] - dx0 * st * xo[1]
    dw0 += dx2 * st * xo[1] - dx1 * st * xo[2]
    dxo2 += dx0 * st * w1 - dx1 * st * w0
    dxo1 += dx2 * st * w0 - dx0 * st * w2
    dxo0 += dx1 * st * w2 - dx2 * st * w1
    # tmp = dot * (1 - ct)
    ddot = dtmp * (1.0 - ct)
    dct -= dtmp * dot
    dw0 += ddot * xo[0]
    dw1 += ddot * xo[1]
    dw2 += ddot * xo[2]
    dxo0 += ddot * w0
    dxo1 += ddot * w1
    dxo2 += ddot * w2
    dtheta = -dct * st + dst * ct - (dw0 * r0 + dw1 * r1 + dw2 * r2) / sqtheta
    dcam[0] = dw0 / theta + dtheta * r0 / theta
    dcam[1] = dw1 / theta + dtheta * r1 / theta
    dcam[2] = dw2 / theta + dtheta * r2 / theta
    return dxo0, dxo1, dxo2


@njit(cache=False)
def _project_adj(cam, X, ub, vb, dcam, dX):
    """Reverse sweep of project for cotangent (ub, vb) of (u, v); writes dcam, dX and
    returns (u, v)."""
    xo = np.empty(3)
    for j in range(3):
        xo[j] = X[j] - cam[3 + j]
    x0, x1, x2 = rodrigues_rotate_point(cam[0:3], xo)
    p0, p1 = x0 / x2, x1 / x2
    rsq = p0 * p0 + p1 * p1
    L = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
    f = cam[6]
    dcam[7] = ub
    dcam[8] = vb
    dcam[6] = ub * p0 * L + vb * p1 * L
    dL = f * (ub * p0 + vb * p1)
    dcam[9] = dL * rsq
    dcam[10] = dL * rsq * rsq
    drsq = dL * (cam[9] + 2.0 * cam[10] * rsq)
    dp0 = ub * L * f + 2.0 * p0 * drsq
    dp1 = vb * L * f + 2.0 * p1 * drsq
    dxo0, dxo1, dxo2 = _rodrigues_adj(cam[0:3], xo, dp0 / x2, dp1 / x2,
                                      -(dp0 * x0 + dp1 * x1) / (x2 * x2), dcam)
    dX[0], dX[1], dX[2] = dxo0, dxo1, dxo2
    dcam[3], dcam[4], dcam[5] = -dxo0, -dxo1, -dxo2
    return p0 * L * f + cam[7], p1 * L * f + cam[8]


@njit(cache=False)
def ba_hand(cams, X, w, obs, feats):
    """Hand-written Jacobian blocks (p, 2, 15) and weight-error derivatives (p).

    Assumes a non-zero rotation (GradBench's inputs); the hand adjoint has no
    small-angle branch."""
    p = obs.shape[0]
    J = np.empty((p, 2, 15))
    dcam = np.empty(11)
    dX = np.empty(3)
    for i in range(p):
        cam = cams[obs[i, 0]]
        pt = X[obs[i, 1]]
        for comp in range(2):
            ub = w[i] if comp == 0 else 0.0
            vb = w[i] if comp == 1 else 0.0
            u, v = _project_adj(cam, pt, ub, vb, dcam, dX)
            J[i, comp, :11] = dcam
            J[i, comp, 11:14] = dX
            J[i, comp, 14] = u - feats[i, 0] if comp == 0 else v - feats[i, 1]
    return J, -2.0 * w
