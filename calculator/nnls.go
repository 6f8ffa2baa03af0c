package calculator

import "math"

// nnls solves min ||A·x − b||² subject to x ≥ 0 (Lawson–Hanson). A is
// row-major with n columns; the systems here have at most a handful of
// columns, so plain normal equations are enough.
func nnls(a [][]float64, b []float64, n int) []float64 {
	x := make([]float64, n)
	passive := make([]bool, n)
	for iter := 0; iter < 10*n+10; iter++ {
		w := gradient(a, b, x, n)
		best, bestW := -1, 1e-12
		for j := range n {
			if !passive[j] && w[j] > bestW {
				best, bestW = j, w[j]
			}
		}
		if best < 0 {
			break
		}
		passive[best] = true
		for inner := 0; inner < 10*n+10; inner++ {
			z := solvePassive(a, b, passive, n)
			if z == nil {
				passive[best] = false
				return x
			}
			feasible := true
			for j := range n {
				if passive[j] && z[j] <= 0 {
					feasible = false
				}
			}
			if feasible {
				copy(x, z)
				break
			}
			alpha := math.Inf(1)
			for j := range n {
				if passive[j] && z[j] <= 0 {
					if t := x[j] / (x[j] - z[j]); t < alpha {
						alpha = t
					}
				}
			}
			for j := range n {
				x[j] += alpha * (z[j] - x[j])
				if passive[j] && x[j] <= 1e-15 {
					passive[j], x[j] = false, 0
				}
			}
		}
	}
	return x
}

// gradient is Aᵀ(b − A·x).
func gradient(a [][]float64, b, x []float64, n int) []float64 {
	w := make([]float64, n)
	for i, row := range a {
		r := b[i]
		for j := range n {
			r -= row[j] * x[j]
		}
		for j := range n {
			w[j] += row[j] * r
		}
	}
	return w
}

// solvePassive solves least squares on the passive columns (others held at
// zero) by the normal equations; nil when they are singular.
func solvePassive(a [][]float64, b []float64, passive []bool, n int) []float64 {
	var idx []int
	for j := range n {
		if passive[j] {
			idx = append(idx, j)
		}
	}
	k := len(idx)
	m := make([][]float64, k)
	for p := range k {
		m[p] = make([]float64, k+1)
	}
	for i, row := range a {
		for p, jp := range idx {
			for q, jq := range idx {
				m[p][q] += row[jp] * row[jq]
			}
			m[p][k] += row[jp] * b[i]
		}
	}
	sol, ok := gauss(m, k)
	if !ok {
		return nil
	}
	z := make([]float64, n)
	for p, j := range idx {
		z[j] = sol[p]
	}
	return z
}

// gauss solves the k×k system in the augmented matrix m with partial
// pivoting.
func gauss(m [][]float64, k int) ([]float64, bool) {
	for c := range k {
		piv := c
		for r := c + 1; r < k; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		if math.Abs(m[piv][c]) < 1e-300 {
			return nil, false
		}
		m[c], m[piv] = m[piv], m[c]
		for r := c + 1; r < k; r++ {
			f := m[r][c] / m[c][c]
			for q := c; q <= k; q++ {
				m[r][q] -= f * m[c][q]
			}
		}
	}
	x := make([]float64, k)
	for r := k - 1; r >= 0; r-- {
		s := m[r][k]
		for q := r + 1; q < k; q++ {
			s -= m[r][q] * x[q]
		}
		x[r] = s / m[r][r]
	}
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
	}
	return x, true
}
