"""GradBench's ht (evals/ht, ADBench's hand tracking, the "simple" variant without
``us``), ported from cpp/gradbench/evals/ht.hpp: a skinned hand model posed by 26
parameters; the residuals are the data points minus their corresponding vertices, and
the eval asks for their dense Jacobian w.r.t. theta (3 * npts x 26, forward mode)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=False)
def angle_axis_to_rotation_matrix(aa):
    """Rotation matrix of the angle-axis vector aa (identity below 1e-4)."""
    R = np.zeros((3, 3))
    norm = math.sqrt(aa[0] * aa[0] + aa[1] * aa[1] + aa[2] * aa[2])
    if norm < 0.0001:
        for i in range(3):
            R[i, i] = 1.0
        return R
    x = aa[0] / norm
    y = aa[1] / norm
    z = aa[2] / norm
    s = math.sin(norm)
    c = math.cos(norm)
    R[0, 0] = x * x + (1.0 - x * x) * c
    R[0, 1] = x * y * (1.0 - c) - z * s
    R[0, 2] = x * z * (1.0 - c) + y * s
    R[1, 0] = x * y * (1.0 - c) + z * s
    R[1, 1] = y * y + (1.0 - y * y) * c
    R[1, 2] = y * z * (1.0 - c) - x * s
    R[2, 0] = x * z * (1.0 - c) - y * s
    R[2, 1] = z * y * (1.0 - c) + x * s
    R[2, 2] = z * z + (1.0 - z * z) * c
    return R


@njit(cache=False)
def euler_transform(tx, ty, tz):
    """4 x 4 homogeneous transform of the rotation Rz(tz) Ry(ty) Rx(tx)."""
    cx, sx = math.cos(tx), math.sin(tx)
    cy, sy = math.cos(ty), math.sin(ty)
    cz, sz = math.cos(tz), math.sin(tz)
    T = np.zeros((4, 4))
    T[0, 0] = cz * cy
    T[0, 1] = -sz * cx + cz * sy * sx
    T[0, 2] = sz * sx + cz * sy * cx
    T[1, 0] = sz * cy
    T[1, 1] = cz * cx + sz * sy * sx
    T[1, 2] = -cz * sx + sz * sy * cx
    T[2, 0] = -sy
    T[2, 1] = cy * sx
    T[2, 2] = cy * cx
    T[3, 3] = 1.0
    return T


@njit(cache=False)
def matmul4(A, B):
    """A @ B for 4 x 4 matrices, as loops."""
    C = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            s = 0.0
            for k in range(4):
                s += A[i, k] * B[k, j]
            C[i, j] = s
    return C


@njit(cache=False)
def to_pose_params(theta, n_bones):
    """The (n_bones + 3) x 3 pose: global rotation, scale 1, translation, bone angles."""
    pose = np.zeros((n_bones + 3, 3))
    for j in range(3):
        pose[0, j] = theta[j]
        pose[1, j] = 1.0
        pose[2, j] = theta[3 + j]
    i_theta = 6
    i_pose = 5
    for _ in range(5):                     # fingers
        for i in range(3):                 # three joints, the first with two angles
            pose[i_pose, 0] = theta[i_theta]
            i_theta += 1
            if i == 0:
                pose[i_pose, 1] = theta[i_theta]
                i_theta += 1
            i_pose += 1
        i_pose += 1
    return pose


@njit(cache=False)
def skinned_vertices(pose, base_relatives, parents, inverse_base_absolutes,
                     base_positions, weights):
    """Vertex positions (n_verts x 3) of the posed, skinned, globally moved hand."""
    n_bones = parents.shape[0]
    n_verts = base_positions.shape[0]
    absolutes = np.zeros((n_bones, 4, 4))
    positions = np.zeros((n_verts, 3))
    for b in range(n_bones):
        tr = euler_transform(pose[b + 3, 0], pose[b + 3, 2], pose[b + 3, 1])
        rel = matmul4(base_relatives[b], tr)
        if parents[b] == -1:
            absolutes[b] = rel
        else:
            absolutes[b] = matmul4(absolutes[parents[b]], rel)
        T = matmul4(absolutes[b], inverse_base_absolutes[b])
        for v in range(n_verts):
            wv = weights[v, b]
            if wv != 0.0:
                for i in range(3):
                    s = 0.0
                    for k in range(4):
                        s += T[i, k] * base_positions[v, k]
                    positions[v, i] += wv * s
    R = angle_axis_to_rotation_matrix(pose[0])
    out = np.empty((n_verts, 3))
    for v in range(n_verts):
        for i in range(3):
            s = 0.0
            for k in range(3):
                s += R[i, k] * pose[1, k] * positions[v, k]
            out[v, i] = s + pose[2, i]
    return out


def ht(theta, base_relatives, parents, inverse_base_absolutes, base_positions, weights,
       points, correspondences):
    """Residuals (npts x 3): data points minus their corresponding skinned vertices."""
    pose = to_pose_params(theta, parents.shape[0])
    verts = skinned_vertices(pose, base_relatives, parents, inverse_base_absolutes,
                             base_positions, weights)
    npts = points.shape[0]
    err = np.empty((npts, 3))
    for i in range(npts):
        for j in range(3):
            err[i, j] = points[i, j] - verts[correspondences[i], j]
    return err
