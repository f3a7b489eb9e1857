package reports_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
)

// notMoney are the keys whose numbers are not sums of costs: rounded
// averages and percentages, which do not double exactly.
var notMoney = map[string]bool{"daily_average": true, "share_percent": true, "change_percent": true}

// doubled reports where the amortised answer b is not the actual answer a
// with every amount twice as much: amounts are the JSON numbers written
// with decimals, as money is; counts and dates must be equal.
func doubled(a, b any, at string) error {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return fmt.Errorf("%s: %v against %v", at, a, b)
		}
		for k, v := range x {
			if notMoney[k] || k == "metric" {
				continue
			}
			if err := doubled(v, y[k], at+"."+k); err != nil {
				return err
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Errorf("%s: %d items against %v", at, len(x), b)
		}
		for i := range x {
			if err := doubled(x[i], y[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case json.Number:
		y, _ := b.(json.Number)
		if !strings.Contains(string(x), ".") {
			if x != y {
				return fmt.Errorf("%s: %s against %s", at, x, y)
			}
			return nil
		}
		p, _ := strconv.ParseFloat(string(x), 64)
		q, _ := strconv.ParseFloat(string(y), 64)
		if q != 2*p {
			return fmt.Errorf("%s: %s amortised, %s actual", at, y, x)
		}
	default:
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return fmt.Errorf("%s: %v against %v", at, a, b)
		}
	}
	return nil
}

func decode(t *testing.T, body string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	return v
}

// TestMetric: every cost read answers metric=amortized from the ledger's
// amortised costs, which the test world makes twice the actual ones: each
// amount of the answer is twice the same read's with metric=actual (the
// default), whichever is read first, so a kept result of one metric never
// answers the other; the answers name their metric; a bad metric is a
// 422.
func TestMetric(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			body := func(path string) string {
				t.Helper()
				resp := w.get(t, path, admin)
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
				}
				return string(b)
			}
			for i, path := range []string{
				"/api/v1/costs/summary?start_date=2026-09-20&end_date=2026-10-19",
				"/api/v1/costs/by-tenant?period_days=30",
				"/api/v1/costs/trends?start_date=2026-10-01&end_date=2026-10-14",
				"/api/v1/costs/chargeback?start_date=2026-10-01&end_date=2026-10-05",
				"/api/v1/costs/chargeback/t1?start_date=2026-10-01&end_date=2026-10-31",
				"/api/v1/costs/chargeback?start_date=2026-10-01&end_date=2026-10-05&format=csv",
				"/api/v1/costs/analysis?group_by=service&start_date=2026-10-01&end_date=2026-10-10",
				"/api/v1/costs/analysis?group_by=tag&tag_key=env&start_date=2026-10-01&end_date=2026-10-10",
				"/api/v1/costs/daily-breakdown?tenant_id=t1&service=Storage&date=2026-10-20",
				"/api/v1/costs/daily-breakdown?tenant_id=t1&service=Storage&date=2026-10-20&by=resource",
			} {
				var actual, amortized string
				if i%2 == 0 {
					amortized, actual = body(path+"&metric=amortized"), body(path+"&metric=actual")
				} else {
					actual, amortized = body(path+"&metric=actual"), body(path+"&metric=amortized")
				}
				if fallback := body(path); fallback != actual {
					t.Errorf("%s: the default is not metric=actual", path)
				}
				if strings.Contains(path, "format=csv") {
					a, _ := csv.NewReader(bytes.NewReader([]byte(actual))).ReadAll()
					b, _ := csv.NewReader(bytes.NewReader([]byte(amortized))).ReadAll()
					if len(a) < 2 || len(a) != len(b) {
						t.Fatalf("%s: %d rows actual, %d amortised", path, len(a), len(b))
					}
					for j := 1; j < len(a); j++ {
						x, _ := strconv.ParseFloat(a[j][len(a[j])-1], 64)
						y, _ := strconv.ParseFloat(b[j][len(b[j])-1], 64)
						if y != 2*x || strings.Join(a[j][:len(a[j])-1], ",") != strings.Join(b[j][:len(b[j])-1], ",") {
							t.Fatalf("%s: row %d amortised %v, actual %v", path, j, b[j], a[j])
						}
					}
					continue
				}
				if err := doubled(decode(t, actual), decode(t, amortized), path); err != nil {
					t.Error(err)
				}
				if strings.Contains(path, "summary") || strings.Contains(path, "analysis") {
					if !strings.Contains(amortized, `"metric":"amortized"`) || !strings.Contains(actual, `"metric":"actual"`) {
						t.Errorf("%s: the answers do not name their metric", path)
					}
				}
			}
			resp := w.get(t, "/api/v1/costs/summary?metric=billed", admin)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"location":"query.metric"`) {
				t.Errorf("a bad metric: %d %s", resp.StatusCode, b)
			}
		})
	}
}
