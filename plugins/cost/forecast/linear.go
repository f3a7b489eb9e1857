package forecast

import "math"

// Line is an ordinary least-squares fit of y = Intercept + Slope·x to the
// points (i, y[i]), i = 0 … n-1.
type Line struct {
	n                          int
	Slope, Intercept, RSquared float64
	// StdError is the residual standard error, √(SSE / (n − 2)).
	StdError float64
	meanX    float64
	sxx      float64
}

// FitLine fits a line to y, which must hold at least three points so that
// the residual variance has a degree of freedom.
func FitLine(y []float64) Line {
	n := float64(len(y))
	meanX := (n - 1) / 2
	var meanY float64
	for _, v := range y {
		meanY += v
	}
	meanY /= n
	// Centred sums keep a perfectly linear series exact to rounding.
	var sxx, sxy, syy float64
	for i, v := range y {
		dx, dy := float64(i)-meanX, v-meanY
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	slope := sxy / sxx
	l := Line{n: len(y), Slope: slope, Intercept: meanY - slope*meanX, meanX: meanX, sxx: sxx, RSquared: 1}
	var sse float64
	for i, v := range y {
		r := v - l.at(float64(i))
		sse += r * r
	}
	l.StdError = math.Sqrt(sse / (n - 2))
	if syy > 0 {
		l.RSquared = max(0, 1-sse/syy)
	}
	return l
}

func (l Line) at(x float64) float64 { return l.Intercept + l.Slope*x }

// Predict is the fitted value at x and the half-width of its two-sided
// prediction interval at the confidence level (0.95 for 95 %): the
// Student t quantile with n − 2 degrees of freedom times the standard
// error of a new observation, s·√(1 + 1/n + (x − x̄)² / Sxx).
func (l Line) Predict(x, level float64) (y, half float64) {
	t := studentTQuantile((1+level)/2, float64(l.n-2))
	se := l.StdError * math.Sqrt(1+1/float64(l.n)+(x-l.meanX)*(x-l.meanX)/l.sxx)
	return l.at(x), t * se
}

// studentTQuantile is the p quantile (p > 0.5) of Student's t distribution
// with df degrees of freedom, by bisection on its distribution function.
func studentTQuantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for studentTCDF(hi, df) < p {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if studentTCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// studentTCDF is P(T ≤ t) for t ≥ 0: 1 − I_{df/(df+t²)}(df/2, 1/2) / 2.
func studentTCDF(t, df float64) float64 {
	return 1 - regIncBeta(df/2, 0.5, df/(df+t*t))/2
}

// regIncBeta is the regularised incomplete beta function I_x(a, b), by the
// continued fraction of Numerical Recipes (betai), on whichever side of
// the mean it converges fast.
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaContinuedFraction(a, b, x) / a
	}
	return 1 - front*betaContinuedFraction(b, a, 1-x)/b
}

func betaContinuedFraction(a, b, x float64) float64 {
	const eps, tiny = 1e-15, 1e-300
	clamp := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/clamp(1-(a+b)*x/(a+1))
	h := d
	for m := 1.0; m <= 300; m++ {
		aa := m * (b - m) * x / ((a - 1 + 2*m) * (a + 2*m))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		h *= d * c
		aa = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 1 + 2*m))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		step := d * c
		h *= step
		if math.Abs(step-1) < eps {
			break
		}
	}
	return h
}
