"""GradBench's kmeans (evals/kmeans): the cost sum_i min_j |C_j - P_i|^2 and Newton's
direction J / diag(H), the Hessian diagonal taken as the Hessian-vector product with ones
(it is diagonal)."""

from __future__ import annotations

import numpy as np


def kmeans_cost(points, centroids):
    """Sum over points of the squared distance to the nearest centroid."""
    n, d = points.shape
    k = centroids.shape[0]
    cost = 0.0
    for i in range(n):
        closest = np.inf
        for j in range(k):
            dist = 0.0
            for c in range(d):
                diff = points[i, c] - centroids[j, c]
                dist += diff * diff
            if dist < closest:
                closest = dist
        cost += closest
    return cost
