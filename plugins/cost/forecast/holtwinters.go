package forecast

import "math"

// Period is the season's length in days: costs follow the week.
const Period = 7

// hwParams are the smoothing parameters of additive Holt-Winters with a
// damped trend, in the classic (not error-correction) form: alpha
// smooths the level, beta the trend, gamma the seasonal indices, and phi
// damps the trend at each step ahead.
type hwParams struct{ alpha, beta, gamma, phi float64 }

// hwModel is a fitted model: its parameters and its state after the last
// day of the history.
type hwModel struct {
	hwParams
	level, trend float64
	// season[i] is the index of the days whose position in the history
	// is i modulo Period.
	season [Period]float64
	// n is the history's length; sigma the standard deviation of the
	// one-step errors over the days after the first two weeks.
	n     int
	sigma float64
}

// grid is every set of parameters the fit tries; it keeps the one whose
// one-step errors over the history have the least sum of squares.
var grid = func() []hwParams {
	var out []hwParams
	for _, a := range []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.7} {
		for _, b := range []float64{0, 0.02, 0.05, 0.1, 0.2} {
			for _, g := range []float64{0.05, 0.1, 0.2, 0.3, 0.5} {
				for _, p := range []float64{0.8, 0.9, 0.95, 0.98, 1} {
					out = append(out, hwParams{a, b, g, p})
				}
			}
		}
	}
	return out
}()

// fitHoltWinters fits y, which holds at least MinSeasonalDays days, trying
// each set of parameters of grid.
func fitHoltWinters(y []float64) hwModel {
	best, bestSSE := hwModel{}, math.Inf(1)
	for _, p := range grid {
		m, sse := runHoltWinters(y, p)
		if sse < bestSSE {
			best, bestSSE = m, sse
		}
	}
	return best
}

// runHoltWinters smooths y with p. The first week starts the level (its
// mean) and the seasonal indices (each day's difference from it); the
// second week's mean less the first's starts the trend. It returns the
// model and the sum of squared one-step errors from the third week on.
func runHoltWinters(y []float64, p hwParams) (hwModel, float64) {
	m := hwModel{hwParams: p, n: len(y)}
	var w0, w1 float64
	for i := range Period {
		w0 += y[i] / Period
		w1 += y[Period+i] / Period
	}
	m.trend = (w1 - w0) / Period
	// The first week's mean is the level of its middle day; the state is
	// carried to its last day.
	m.level = w0 + float64(Period/2)*m.trend
	for i := range Period {
		m.season[i] = y[i] - (w0 + float64(i-Period/2)*m.trend)
	}
	var sse float64
	var judged int
	for t := Period; t < len(y); t++ {
		s := m.season[t%Period]
		if t >= 2*Period {
			e := y[t] - (m.level + p.phi*m.trend + s)
			sse += e * e
			judged++
		}
		level := p.alpha*(y[t]-s) + (1-p.alpha)*(m.level+p.phi*m.trend)
		m.trend = p.beta*(level-m.level) + (1-p.beta)*p.phi*m.trend
		m.level = level
		m.season[t%Period] = p.gamma*(y[t]-level) + (1-p.gamma)*s
	}
	if judged > 0 {
		m.sigma = math.Sqrt(sse / float64(judged))
	}
	return m, sse
}

// at is the forecast h days after the history's last day (h ≥ 1).
func (m hwModel) at(h int) float64 {
	damped := 0.0
	f := 1.0
	for range h {
		f *= m.phi
		damped += f
	}
	return m.level + damped*m.trend + m.season[(m.n-1+h)%Period]
}

// spread is the standard deviation of the forecast error h days ahead
// under the model: σ·√(1 + Σ_{j<h} c_j²) with c_j = α + β·φ_j + γ·[j is a
// whole number of seasons], in the error-correction form's parameters
// (β = α·beta, γ = gamma·(1 − α)) and φ_j = φ + … + φ^j (Hyndman et al.,
// Forecasting with Exponential Smoothing, 2008, table 6.2, class 1).
func (m hwModel) spread(h int) float64 {
	b, g := m.alpha*m.beta, m.gamma*(1-m.alpha)
	sum, phiJ, f := 1.0, 0.0, 1.0
	for j := 1; j < h; j++ {
		f *= m.phi
		phiJ += f
		c := m.alpha + b*phiJ
		if j%Period == 0 {
			c += g
		}
		sum += c * c
	}
	return m.sigma * math.Sqrt(sum)
}
