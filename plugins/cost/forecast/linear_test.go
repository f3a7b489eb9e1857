package forecast

import (
	"math"
	"testing"
)

func TestFitOfALinearSeriesIsExact(t *testing.T) {
	y := make([]float64, 90)
	for i := range y {
		y[i] = 1234.56 + 7.89*float64(i)
	}
	l := FitLine(y)
	if math.Abs(l.Slope-7.89) > 1e-9 || math.Abs(l.Intercept-1234.56) > 1e-9 || math.Abs(l.RSquared-1) > 1e-12 {
		t.Fatalf("fit %+v", l)
	}
	for _, x := range []float64{90, 120, 179} {
		p, half := l.Predict(x, 0.95)
		if want := 1234.56 + 7.89*x; math.Abs(p-want) > 1e-8 || math.Abs(half) > 1e-8 {
			t.Errorf("at %g: %g ± %g, want %g ± 0", x, p, half, want)
		}
	}
}

// TestPredictionInterval: for y = 0, 1, 0, 1, … the residual variance and
// the interval follow the textbook formula.
func TestPredictionInterval(t *testing.T) {
	y := []float64{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}
	l := FitLine(y)
	n := 10.0
	meanX, sxx := 4.5, 82.5
	slope := 2.5 / sxx // Σ(x − x̄)(y − ȳ) = 2.5
	if math.Abs(l.Slope-slope) > 1e-12 {
		t.Fatalf("slope %g, want %g", l.Slope, slope)
	}
	var sse float64
	for i, v := range y {
		r := v - (0.5 + slope*(float64(i)-meanX))
		sse += r * r
	}
	s := math.Sqrt(sse / (n - 2))
	p, half := l.Predict(15, 0.95)
	want := 2.306004135 * s * math.Sqrt(1+1/n+(15-meanX)*(15-meanX)/sxx)
	if math.Abs(p-(0.5+slope*10.5)) > 1e-12 || math.Abs(half-want) > 1e-7 {
		t.Errorf("prediction at 15: %g ± %g, want ± %g", p, half, want)
	}
	if constant := FitLine([]float64{3, 3, 3}); constant.Slope != 0 || constant.RSquared != 1 || constant.StdError != 0 {
		t.Errorf("constant series: %+v", constant)
	}
}

func TestStudentTQuantile(t *testing.T) {
	for _, c := range []struct{ df, want float64 }{
		{1, 12.7062047362}, {2, 4.3026527297}, {5, 2.5705818366}, {10, 2.2281388520}, {28, 2.0484071418}, {88, 1.9872898888}, {1e6, 1.9599663},
	} {
		if got := studentTQuantile(0.975, c.df); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("t(0.975, %g) = %.10f, want %.10f", c.df, got, c.want)
		}
	}
}
