package reports_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
)

// focusColumn is a column of the FOCUS 1.2 specification.
type focusColumn struct {
	level      string
	allowsNull bool
	dataType   string
}

// focusSpec reads the specification's columns from testdata: id →
// column.
func focusSpec(t *testing.T) map[string]focusColumn {
	t.Helper()
	f, err := os.Open("testdata/focus-1.2-columns.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec := map[string]focusColumn{}
	sc := bufio.NewScanner(f)
	header := true
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 4 {
			t.Fatalf("spec line %q: want 4 fields", line)
		}
		if header {
			if line != "column_id\tfeature_level\tallows_nulls\tdata_type" {
				t.Fatalf("spec header %q", line)
			}
			header = false
			continue
		}
		spec[fields[0]] = focusColumn{level: fields[1], allowsNull: fields[2] == "True", dataType: fields[3]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(spec) != 57 {
		t.Fatalf("spec has %d columns, want FOCUS 1.2's 57", len(spec))
	}
	return spec
}

// The values FOCUS 1.2 allows in the columns that have a list.
var focusAllowed = map[string][]string{
	"ChargeCategory":  {"Usage", "Purchase", "Tax", "Credit", "Adjustment"},
	"ChargeFrequency": {"One-Time", "Recurring", "Usage-Based"},
	"ChargeClass":     {"Correction"},
	"ServiceCategory": {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases", "Developer Tools", "Multicloud",
		"Identity", "Integration", "Internet of Things", "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
		"Storage", "Web", "Other"},
}

var (
	focusDecimal = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)
	focusTime    = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T00:00:00Z$`)
)

// focusFrom and focusTo span a month's end, so rows fall in two billing
// periods.
var focusFrom, focusTo = mustDay("2026-10-25"), mustDay("2026-11-05")

// TestFocusConformance: the FOCUS export, as CSV and as Parquet, on both
// databases, holds the specification's columns with values of their types
// and allowed values, one row per resource row of the ledger with its
// tags, the costs to the cent, the same rows in both formats, and a
// Parquet schema of the specification's types.
func TestFocusConformance(t *testing.T) {
	spec := focusSpec(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			resources, tags := focusExtras(t, w)
			q := fmt.Sprintf("/api/v1/costs/focus?start_date=%s&end_date=%s", focusFrom, focusTo)

			resp := w.get(t, q, admin)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
				resp.Header.Get("Content-Disposition") != `attachment; filename="focus-2026-10-25-2026-11-05.csv"` {
				t.Fatalf("csv: %d %v %.300s", resp.StatusCode, resp.Header, b)
			}
			records, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
			if err != nil || len(records) < 2 {
				t.Fatalf("csv: %v, %d records", err, len(records))
			}
			header, rows := records[0], records[1:]
			checkFocusColumns(t, spec, header)

			// Every resource row of the range, each once, with its costs,
			// names and tags.
			want := map[string]ledger.ResourceDay{}
			for _, r := range resources {
				if r.Day >= focusFrom && r.Day <= focusTo {
					want[focusKey(r.SubscriptionID, r.Day, r.ResourceID, r.Service, r.Currency)] = r
				}
			}
			if len(rows) != len(want) {
				t.Errorf("csv: %d rows, want the ledger's %d", len(rows), len(want))
			}
			col := map[string]int{}
			for i, c := range header {
				col[c] = i
			}
			names := map[string]string{}
			for _, tn := range tenants {
				names[tn.ID] = tn.Name
			}
			var prev []string
			for i, row := range rows {
				checkFocusRow(t, spec, header, row)
				v := func(c string) string { return row[col[c]] }
				service := strings.TrimPrefix(v("ServiceName"), "'")
				start, _ := time.Parse(time.RFC3339, v("ChargePeriodStart"))
				resource := v("ResourceId")
				k := focusKey(strings.TrimPrefix(v("SubAccountId"), "/subscriptions/"), ledger.DayOf(start), resource, service, v("BillingCurrency"))
				r, ok := want[k]
				if !ok {
					t.Errorf("row %d %v: not in the ledger, or twice", i, row)
					continue
				}
				delete(want, k)
				month := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
				name := ""
				if resource != "" {
					name = resource[strings.LastIndexByte(resource, '/')+1:]
				}
				if v("BilledCost") != r.Cost.String() || v("EffectiveCost") != r.Amortized.String() || v("ListCost") != r.Amortized.String() ||
					v("ContractedCost") != r.Amortized.String() || v("BillingAccountId") != r.TenantID || v("BillingAccountName") != names[r.TenantID] ||
					v("ChargePeriodEnd") != start.AddDate(0, 0, 1).Format(time.RFC3339) ||
					v("BillingPeriodStart") != month.Format(time.RFC3339) || v("BillingPeriodEnd") != month.AddDate(0, 1, 0).Format(time.RFC3339) ||
					v("x_ResourceGroupName") != r.ResourceGroup || v("ResourceName") != formulaSafe(name) || v("SubAccountType") != "Subscription" ||
					v("ServiceCategory") != reports.ServiceCategory(service) {
					t.Errorf("row %d: %v, want %+v", i, row, r)
				}
				if got, wantTags := v("Tags"), tags[[2]string{r.SubscriptionID, r.ResourceID}]; wantTags == nil && got != "" {
					t.Errorf("row %d: tags %s, want null", i, got)
				} else if wantTags != nil {
					var m map[string]string
					if err := json.Unmarshal([]byte(got), &m); err != nil || fmt.Sprint(m) != fmt.Sprint(wantTags) {
						t.Errorf("row %d: tags %s, want %v", i, got, wantTags)
					}
				}
				// In order of tenant, subscription and day (resources and
				// services sort by the database's collation).
				cur := []string{v("BillingAccountId"), v("SubAccountId"), v("ChargePeriodStart")}
				if prev != nil && slices.Compare(prev, cur) > 0 {
					t.Errorf("row %d %v after %v", i, cur, prev)
				}
				prev = cur
			}
			if len(want) != 0 {
				t.Errorf("csv: %d ledger rows missing", len(want))
			}
			if !slices.ContainsFunc(rows, func(r []string) bool { return r[col["ServiceName"]] == `'=HYPERLINK("x")` }) {
				t.Error("a service that reads as a formula is not escaped")
			}

			// The same rows as Parquet, in its schema of the spec's types.
			resp = w.get(t, q+"&format=parquet", admin)
			pb, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != reports.ParquetType ||
				resp.Header.Get("Content-Disposition") != `attachment; filename="focus-2026-10-25-2026-11-05.parquet"` {
				t.Fatalf("parquet: %d %v %.300s", resp.StatusCode, resp.Header, pb)
			}
			pheader, prows := readFocusParquet(t, spec, pb)
			if !slices.Equal(pheader, header) {
				t.Errorf("parquet columns %v, csv %v", pheader, header)
			}
			if len(prows) != len(rows) {
				t.Fatalf("parquet: %d rows, csv %d", len(prows), len(rows))
			}
			for i := range rows {
				if !slices.Equal(prows[i], rows[i]) {
					t.Errorf("row %d: parquet %v, csv %v", i, prows[i], rows[i])
				}
			}
		})
	}
}

// focusExtras adds to the world a row of no resource with a credit, and a
// tag whose value JSON must escape; it returns the world's resource rows
// and each resource's tags with them.
func focusExtras(t *testing.T, w *world) ([]ledger.ResourceDay, map[[2]string]map[string]string) {
	t.Helper()
	ctx := context.Background()
	extra := []ledger.ResourceDay{{SubscriptionID: "s4", Day: focusFrom + 3, Service: "Support", Currency: "EUR", TenantID: "t2",
		Month: (focusFrom + 3).Month(), Cost: -1234, Amortized: -1234}}
	if _, err := w.db.NewInsert().Model(&extra).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	quoted := ledger.ResourceTag{SubscriptionID: w.tags[0].SubscriptionID, ResourceID: w.tags[0].ResourceID, Key: "owner",
		Value: "\"Zoë\" <ops>\\\n", TenantID: w.tags[0].TenantID}
	if _, err := w.db.NewInsert().Model(&quoted).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	tags := map[[2]string]map[string]string{}
	for _, tg := range append(slices.Clone(w.tags), quoted) {
		k := [2]string{tg.SubscriptionID, tg.ResourceID}
		if tags[k] == nil {
			tags[k] = map[string]string{}
		}
		tags[k][tg.Key] = tg.Value
	}
	return append(slices.Clone(w.resources), extra...), tags
}

func focusKey(sub string, d ledger.Day, resource, service, currency string) string {
	return strings.Join([]string{sub, d.String(), resource, service, currency}, "|")
}

// checkFocusColumns requires every Mandatory column, only the spec's
// columns besides custom ones, and custom ones prefixed x_.
func checkFocusColumns(t *testing.T, spec map[string]focusColumn, header []string) {
	t.Helper()
	if !slices.Equal(header, reports.FocusColumns) {
		t.Errorf("header %v, want %v", header, reports.FocusColumns)
	}
	for id, c := range spec {
		if c.level == "Mandatory" && !slices.Contains(header, id) {
			t.Errorf("Mandatory column %s missing", id)
		}
	}
	for _, id := range header {
		if _, ok := spec[id]; !ok && !strings.HasPrefix(id, "x_") {
			t.Errorf("column %s is neither FOCUS 1.2's nor custom (x_)", id)
		}
	}
	if slices.Contains(header, "SubAccountName") {
		t.Error("SubAccountName, which Steward does not know, is a column")
	}
}

// checkFocusRow checks each value of a CSV row against its column's type,
// nullability and allowed values.
func checkFocusRow(t *testing.T, spec map[string]focusColumn, header, row []string) {
	t.Helper()
	for i, v := range row {
		id := header[i]
		c, ok := spec[id]
		if !ok {
			c = focusColumn{allowsNull: true, dataType: "String"}
		}
		if v == "" {
			if !c.allowsNull {
				t.Errorf("%s is null in %v", id, row)
			}
			continue
		}
		switch c.dataType {
		case "Decimal":
			if !focusDecimal.MatchString(v) {
				t.Errorf("%s = %q is not a decimal", id, v)
			}
		case "Date/Time":
			if _, err := time.Parse(time.RFC3339, v); err != nil || !focusTime.MatchString(v) {
				t.Errorf("%s = %q is not a FOCUS date/time", id, v)
			}
		case "JSON":
			var m map[string]any
			if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
				t.Errorf("%s = %q is not a JSON object", id, v)
			}
		}
		if allowed, ok := focusAllowed[id]; ok && !slices.Contains(allowed, v) {
			t.Errorf("%s = %q is not among %v", id, v, allowed)
		}
	}
}

// focusParquetTypes are the Parquet types each FOCUS data type is written
// as: physical type and logical type.
var focusParquetTypes = map[string]string{
	"Decimal":   "INT64 DECIMAL(18,2)",
	"Date/Time": "INT64 TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS)",
	"String":    "BYTE_ARRAY STRING",
	"JSON":      "BYTE_ARRAY JSON",
}

// readFocusParquet checks the file's schema against the spec's types and
// reads its rows back as the CSV writes them.
func readFocusParquet(t *testing.T, spec map[string]focusColumn, b []byte) ([]string, [][]string) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var header, types []string
	for _, el := range f.Metadata().Schema[1:] {
		header = append(header, el.Name)
		c, ok := spec[el.Name]
		if !ok {
			c = focusColumn{allowsNull: true, dataType: "String"}
		}
		physical, _ := el.Type.Get()
		repetition, _ := el.RepetitionType.Get()
		got := fmt.Sprintf("%s %s", physical, el.LogicalType.String())
		if got != focusParquetTypes[c.dataType] || (repetition.String() == "OPTIONAL") != c.allowsNull {
			t.Errorf("parquet column %s: %s %s, want %s for %+v", el.Name, repetition, got, focusParquetTypes[c.dataType], c)
		}
		types = append(types, c.dataType)
	}
	var out [][]string
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 100)
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				rec := make([]string, len(header))
				for _, v := range row {
					i := v.Column()
					switch {
					case v.IsNull():
					case types[i] == "Decimal":
						rec[i] = ledger.Amount(v.Int64()).String()
					case types[i] == "Date/Time":
						rec[i] = time.UnixMilli(v.Int64()).UTC().Format(time.RFC3339)
					default:
						rec[i] = formulaSafe(string(v.ByteArray()))
					}
				}
				out = append(out, rec)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	return header, out
}

// formulaSafe is a text as the CSV writes it, guarded against formulas.
func formulaSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// TestFocusRefusals: bad dates, ranges and formats are 422 naming the
// parameter; a tenant outside the caller's scope is a 403 without a trace
// of it, and a caller's export holds its tenants' rows only; a read that
// fails before anything was sent is a 500 without the attachment header.
func TestFocusRefusals(t *testing.T) {
	w := newWorld(t, store.DialectSQLite)
	for path, location := range map[string]string{
		"/api/v1/costs/focus?end_date=2026-10-31":                                    "query.start_date",
		"/api/v1/costs/focus?start_date=2026-10-01":                                  "query.end_date",
		"/api/v1/costs/focus?start_date=2026-10-32&end_date=2026-10-31":              "query.start_date",
		"/api/v1/costs/focus?start_date=2026-10-01&end_date=31.10.2026":              "query.end_date",
		"/api/v1/costs/focus?start_date=2026-10-31&end_date=2026-10-01":              "query.start_date",
		"/api/v1/costs/focus?start_date=2025-10-01&end_date=2026-10-31":              "query.start_date",
		"/api/v1/costs/focus?start_date=2026-10-01&end_date=2026-10-31&format=json":  "query.format",
		"/api/v1/costs/focus?start_date=2026-10-01&end_date=2026-10-31&format=excel": "query.format",
	} {
		resp := w.get(t, path, admin)
		b, _ := io.ReadAll(resp.Body)
		var p struct {
			Errors []struct{ Location string } `json:"errors"`
		}
		_ = json.Unmarshal(b, &p)
		if resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != location ||
			resp.Header.Get("Content-Disposition") != "" {
			t.Errorf("%s: %d %v %s, want 422 naming %s", path, resp.StatusCode, resp.Header, b, location)
		}
	}
	q := "/api/v1/costs/focus?start_date=2026-10-01&end_date=2026-10-31"
	for _, path := range []string{q + "&tenant_ids=t2", q + "&tenant_ids=t1,t2", q + "&format=parquet&tenant_ids=t2"} {
		resp := w.get(t, path, userA)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(b), "Beta") || strings.Contains(string(b), "s4") {
			t.Errorf("%s as Alpha's user: %d %s, want 403", path, resp.StatusCode, b)
		}
	}
	if resp := w.get(t, q, sdk.Principal{}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous: %d", resp.StatusCode)
	}
	resp := w.get(t, q, userA)
	records, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("Alpha's user's export: %d %v", resp.StatusCode, err)
	}
	want := 0
	for _, r := range w.resources {
		if r.TenantID == "t1" && r.Day >= mustDay("2026-10-01") && r.Day <= mustDay("2026-10-31") {
			want++
		}
	}
	if len(records) != want+1 {
		t.Errorf("Alpha's user's export: %d rows, want Alpha's %d", len(records)-1, want)
	}
	for _, r := range records[1:] {
		if r[1] != "t1" || r[2] != "Alpha" {
			t.Fatalf("Alpha's user's export holds %v", r)
		}
	}

	// A read that fails before the first byte is an error, not a file.
	if _, err := w.db.ExecContext(context.Background(), "ALTER TABLE cost_resource_tags RENAME TO cost_resource_tags_gone"); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"csv", "parquet"} {
		resp := w.get(t, q+"&format="+format, admin)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Content-Disposition") != "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s of a failing read: %d %v %s, want a 500 problem", format, resp.StatusCode, resp.Header, b)
		}
	}
}

// TestServiceCategory: the demo world's services have their categories,
// every category of the table is one FOCUS allows, and an unknown service
// is Other.
func TestServiceCategory(t *testing.T) {
	for service, want := range map[string]string{
		"Virtual Machines": "Compute", "Storage": "Storage", "Bandwidth": "Networking", "Key Vault": "Security",
		"Azure SQL Database": "Databases", "SQL Database": "Databases", "Azure Kubernetes Service": "Compute", "Azure Monitor": "Management and Governance",
		"Virtual Network": "Networking", "Log Analytics": "Management and Governance", "Azure App Service": "Web", "Load Balancer": "Networking",
		"virtual machines": "Compute", "Quantum Widgets": "Other", "": "Other",
	} {
		if got := reports.ServiceCategory(service); got != want {
			t.Errorf("%q: %s, want %s", service, got, want)
		}
	}
	for service, c := range reports.ServiceCategories() {
		if !slices.Contains(focusAllowed["ServiceCategory"], c) {
			t.Errorf("%s: category %s is not one FOCUS 1.2 allows", service, c)
		}
	}
}
