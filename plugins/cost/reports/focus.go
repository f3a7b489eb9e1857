package reports

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/parquet-go/parquet-go"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// The FOCUS export writes the ledger's resource grain in the columns of
// the FinOps Open Cost and Usage Specification (FOCUS) 1.2: one row per
// resource, service, day and currency.

// ParquetType is the media type of a Parquet file.
const ParquetType = "application/vnd.apache.parquet"

// focusRowGroup is how many rows a Parquet row group holds: the most the
// export keeps in memory at once.
const focusRowGroup = 10_000

const focusDoc = "The costs of the tenants (all the caller's when tenant_ids is absent) from start_date to end_date (both inclusive) " +
	"in the columns of the FinOps Open Cost and Usage Specification (FOCUS) 1.2: one row per resource, service, day and currency, " +
	"ordered by tenant, subscription, day, resource, service and currency, streamed as CSV (format=csv, the default: a header row of column ids, " +
	"an empty cell for null, and a text cell that a spreadsheet would read as a formula prefixed with an apostrophe) " +
	"or as Parquet (format=parquet: decimals DECIMAL(18,2), dates TIMESTAMP in milliseconds UTC, Tags a JSON string, nullable columns OPTIONAL), " +
	"with a Content-Disposition attachment named focus-<start_date>-<end_date>.csv or .parquet. " +
	"Every Mandatory column is present, with SubAccountId (/subscriptions/<id>), SubAccountType, ResourceId and ResourceName (in lower case, as the ledger keeps ids; " +
	"null for costs of no resource), Tags (the resource's tags as at its subscription's last cost sync, keys in lower case), ChargeFrequency and x_ResourceGroupName. " +
	"BilledCost is the actual cost and EffectiveCost the amortised cost, exact to the cent; they add up, per currency, to the summary's total_cost " +
	"with metric=actual and metric=amortized. Limitations: Steward keeps no price sheet, so ListCost and ContractedCost carry the EffectiveCost, and " +
	"PricingQuantity and PricingUnit are null; Steward does not know the billing account, so BillingAccountId and BillingAccountName are the tenant's id and name; " +
	"it does not know subscription names, so SubAccountName is left out; every row is a Usage charge, a commitment's purchase included. A range of more than 366 days is refused."

// focusColumnsDoc lists the export's columns, in their order.
const focusColumnsDoc = "BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeClass," +
	"ChargeDescription,ChargeFrequency,ChargePeriodEnd,ChargePeriodStart,ContractedCost,EffectiveCost,InvoiceIssuerName,ListCost,PricingQuantity,PricingUnit," +
	"ProviderName,PublisherName,ResourceId,ResourceName,ServiceCategory,ServiceName,SubAccountId,SubAccountType,Tags,x_ResourceGroupName"

// FocusColumns are the export's column ids, in order: the CSV's header and
// the Parquet file's columns.
var FocusColumns = strings.Split(focusColumnsDoc, ",")

// focusRow is one row of the export, its fields FocusColumns in order. A
// pointer is a column that may be null; the always null columns
// (ChargeClass, ChargeDescription, PricingQuantity, PricingUnit) have no
// field.
type focusRow struct {
	BilledCost         ledger.Amount
	BillingAccountID   string
	BillingAccountName *string
	BillingCurrency    string
	BillingPeriodEnd   time.Time
	BillingPeriodStart time.Time
	ChargeCategory     string
	ChargeFrequency    string
	ChargePeriodEnd    time.Time
	ChargePeriodStart  time.Time
	ContractedCost     ledger.Amount
	EffectiveCost      ledger.Amount
	InvoiceIssuerName  string
	ListCost           ledger.Amount
	ProviderName       string
	PublisherName      string
	ResourceID         *string
	ResourceName       *string
	ServiceCategory    string
	ServiceName        string
	SubAccountID       string
	SubAccountType     string
	Tags               *string
	ResourceGroupName  *string
}

// The Parquet types of FOCUS's data types: Decimal is DECIMAL(18,2) on
// the cents, Date/Time a TIMESTAMP in milliseconds adjusted to UTC, JSON
// a string of the JSON logical type. A column that allows nulls is
// OPTIONAL.
var (
	focusDecimal  = parquet.Decimal(2, 18, parquet.Int64Type)
	focusDateTime = parquet.Timestamp(parquet.Millisecond)
	focusString   = parquet.String()
	focusSchema   = parquet.NewSchema("focus", parquet.Group{
		// A group orders its columns by name, as FocusColumns are.
		"BilledCost": focusDecimal, "BillingAccountId": focusString, "BillingAccountName": parquet.Optional(focusString),
		"BillingCurrency": focusString, "BillingPeriodEnd": focusDateTime, "BillingPeriodStart": focusDateTime,
		"ChargeCategory": focusString, "ChargeClass": parquet.Optional(focusString), "ChargeDescription": parquet.Optional(focusString),
		"ChargeFrequency": focusString, "ChargePeriodEnd": focusDateTime, "ChargePeriodStart": focusDateTime,
		"ContractedCost": focusDecimal, "EffectiveCost": focusDecimal, "InvoiceIssuerName": focusString, "ListCost": focusDecimal,
		"PricingQuantity": parquet.Optional(focusDecimal), "PricingUnit": parquet.Optional(focusString),
		"ProviderName": focusString, "PublisherName": focusString,
		"ResourceId": parquet.Optional(focusString), "ResourceName": parquet.Optional(focusString),
		"ServiceCategory": focusString, "ServiceName": focusString,
		"SubAccountId": parquet.Optional(focusString), "SubAccountType": parquet.Optional(focusString),
		"Tags": parquet.Optional(parquet.JSON()), "x_ResourceGroupName": parquet.Optional(focusString),
	})
)

// focusTime is FOCUS's Date/Time format, ISO 8601 in UTC.
const focusTime = "2006-01-02T15:04:05Z"

// csv is the row as CSV cells in FocusColumns' order, in record's space:
// null is empty. dates are the row's BillingPeriodEnd,
// BillingPeriodStart, ChargePeriodEnd and ChargePeriodStart as text.
func (f *focusRow) csv(record []string, dates *[4]string) []string {
	text := func(s *string) string {
		if s == nil {
			return ""
		}
		return Cell(*s)
	}
	// Without a price sheet, ListCost and ContractedCost are the
	// EffectiveCost: written once.
	effective := f.EffectiveCost.String()
	list, contracted := effective, effective
	if f.ListCost != f.EffectiveCost {
		list = f.ListCost.String()
	}
	if f.ContractedCost != f.EffectiveCost {
		contracted = f.ContractedCost.String()
	}
	return append(record[:0], f.BilledCost.String(), Cell(f.BillingAccountID), text(f.BillingAccountName), Cell(f.BillingCurrency),
		dates[0], dates[1], f.ChargeCategory, "", "", f.ChargeFrequency,
		dates[2], dates[3], contracted, effective,
		f.InvoiceIssuerName, list, "", "", f.ProviderName, f.PublisherName,
		text(f.ResourceID), text(f.ResourceName), f.ServiceCategory, Cell(f.ServiceName), Cell(f.SubAccountID), f.SubAccountType,
		text(f.Tags), text(f.ResourceGroupName))
}

// parquet is the row as focusSchema's values, in row's space.
func (f *focusRow) parquet(row parquet.Row) parquet.Row {
	row = row[:0]
	// A value of the next column: defined is its definition level, 1 for
	// a value of an OPTIONAL column, 0 for a REQUIRED one's or a null.
	add := func(v parquet.Value, defined int) { row = append(row, v.Level(0, defined, len(row))) }
	cents := func(a ledger.Amount) { add(parquet.Int64Value(int64(a)), 0) }
	ts := func(t time.Time) { add(parquet.Int64Value(t.UnixMilli()), 0) }
	text := func(s string) { add(parquet.ByteArrayValue([]byte(s)), 0) }
	optional := func(s *string) {
		if s == nil {
			add(parquet.NullValue(), 0)
			return
		}
		add(parquet.ByteArrayValue([]byte(*s)), 1)
	}
	null := func() { add(parquet.NullValue(), 0) }
	cents(f.BilledCost)
	text(f.BillingAccountID)
	optional(f.BillingAccountName)
	text(f.BillingCurrency)
	ts(f.BillingPeriodEnd)
	ts(f.BillingPeriodStart)
	text(f.ChargeCategory)
	null() // ChargeClass
	null() // ChargeDescription
	text(f.ChargeFrequency)
	ts(f.ChargePeriodEnd)
	ts(f.ChargePeriodStart)
	cents(f.ContractedCost)
	cents(f.EffectiveCost)
	text(f.InvoiceIssuerName)
	cents(f.ListCost)
	null() // PricingQuantity
	null() // PricingUnit
	text(f.ProviderName)
	text(f.PublisherName)
	optional(f.ResourceID)
	optional(f.ResourceName)
	text(f.ServiceCategory)
	text(f.ServiceName)
	optional(&f.SubAccountID)
	optional(&f.SubAccountType)
	optional(f.Tags)
	optional(f.ResourceGroupName)
	return row
}

// focusRowOf is the export's row of a ledger row, with its tenant's name
// (empty when unknown).
func focusRowOf(c FocusCost, tenantName string) focusRow {
	day := c.Day.Time()
	month := time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, time.UTC)
	f := focusRow{
		BilledCost: c.Cost, BillingAccountID: c.TenantID, BillingAccountName: nonEmpty(tenantName), BillingCurrency: c.Currency,
		BillingPeriodStart: month, BillingPeriodEnd: month.AddDate(0, 1, 0),
		ChargeCategory: "Usage", ChargeFrequency: "Usage-Based", ChargePeriodStart: day, ChargePeriodEnd: day.AddDate(0, 0, 1),
		// No price sheet: the list and contracted costs are the effective.
		EffectiveCost: c.Amortized, ListCost: c.Amortized, ContractedCost: c.Amortized,
		InvoiceIssuerName: "Microsoft", ProviderName: "Microsoft", PublisherName: "Microsoft",
		ServiceCategory: ServiceCategory(c.Service), ServiceName: c.Service,
		SubAccountID: "/subscriptions/" + c.SubscriptionID, SubAccountType: "Subscription",
		Tags: nonEmpty(c.Tags), ResourceGroupName: nonEmpty(c.ResourceGroup),
	}
	if c.ResourceID != "" {
		name := c.ResourceID[strings.LastIndexByte(c.ResourceID, '/')+1:]
		f.ResourceID, f.ResourceName = &c.ResourceID, &name
	}
	return f
}

// nonEmpty is s, or nil when it is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// FocusCost is one row of the ledger's resource grain with the resource's
// tags.
type FocusCost struct {
	TenantID       string
	SubscriptionID string
	Day            ledger.Day
	// ResourceID is empty for the costs of no resource.
	ResourceID    string
	Service       string
	Currency      string
	ResourceGroup string
	// Cost is the actual cost, Amortized the amortised cost.
	Cost      ledger.Amount
	Amortized ledger.Amount
	// Tags is the resource's tags as a JSON object, keys in order; empty
	// when it has none.
	Tags string
}

// EachFocusCost calls fn with every resource row of the tenants in r with
// its resource's tags, ordered by tenant, subscription, day, resource,
// service and currency, reading them from a cursor one at a time; an
// error from fn stops the read and is returned. The tags are aggregated
// per resource in the database, in the same query.
func (s *Store) EachFocusCost(ctx context.Context, tenants []string, r Range, fn func(FocusCost) error) error {
	if len(tenants) == 0 {
		return nil
	}
	pair := "json_quote(tag_key) || ':' || json_quote(tag_value)"
	agg := "group_concat(" + pair + ", ',' ORDER BY tag_key)"
	if s.DB.Dialect().Name() == dialect.PG {
		pair = "to_json(tag_key)::text || ':' || to_json(tag_value)::text"
		agg = "string_agg(" + pair + ", ',' ORDER BY tag_key)"
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT d.tenant_id, d.subscription_id, d.day, d.resource_id, d.service, d.currency, d.resource_group,
			d.cost_cents, d.amortized_cents, COALESCE(t.tags, '')
		FROM cost_resource_daily d
		LEFT JOIN (SELECT subscription_id, resource_id, '{' || `+agg+` || '}' AS tags
			FROM cost_resource_tags WHERE tenant_id IN (?)
			GROUP BY subscription_id, resource_id) t ON t.subscription_id = d.subscription_id AND t.resource_id = d.resource_id
		WHERE d.tenant_id IN (?) AND d.day BETWEEN ? AND ?
		ORDER BY d.tenant_id, d.subscription_id, d.day, d.resource_id, d.service, d.currency`,
		bun.List(tenants), bun.List(tenants), r.From, r.To)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var c FocusCost
		if err := rows.Scan(&c.TenantID, &c.SubscriptionID, &c.Day, &c.ResourceID, &c.Service, &c.Currency, &c.ResourceGroup,
			&c.Cost, &c.Amortized, &c.Tags); err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return rows.Err()
}

type focusIn struct {
	Tenants   sdk.TenantIDs `query:"tenant_ids"`
	StartDate string        `query:"start_date" required:"true" format:"date" doc:"First day (inclusive)"`
	EndDate   string        `query:"end_date" required:"true" format:"date" doc:"Last day (inclusive); at most 366 days after start_date"`
	Format    string        `query:"format" enum:"csv,parquet" default:"csv"`
}

// focusOut is the export: a stream, with its attachment header.
type focusOut struct {
	ContentDisposition string `header:"Content-Disposition" doc:"attachment; filename=\"focus-<start_date>-<end_date>.csv\" (or .parquet)"`
	Body               func(huma.Context)
}

// focusRoute declares the FOCUS export.
func (h *Handlers) focusRoute() sdk.Route {
	return sdk.Get("/api/v1/costs/focus", sdk.Op{ID: "costs-focus", Tags: []string{tag}, Summary: "Costs in the FOCUS 1.2 columns, as CSV or Parquet",
		Description: focusDoc,
		Responses: map[string]*huma.Response{
			"200": {Description: "The costs as FOCUS 1.2 CSV, or as Parquet with format=parquet", Content: map[string]*huma.MediaType{
				"text/csv": {Schema: &huma.Schema{Type: huma.TypeString, Description: "Header row " + focusColumnsDoc + ", then one row per resource, service, day and currency"}},
				ParquetType: {Schema: &huma.Schema{Type: huma.TypeString, Format: "binary",
					Description: "A Parquet file of the columns " + focusColumnsDoc + ", in row groups of at most 10,000 rows"}},
			}},
			"422": {Description: "A bad date, range or format"},
		}}, h.focus)
}

func (h *Handlers) focus(ctx context.Context, in *focusIn) (*focusOut, error) {
	rng, err := chargebackRange(ChargebackParams{StartDate: in.StartDate, EndDate: in.EndDate})
	if err != nil {
		return nil, err
	}
	tenants := []string(in.Tenants)
	names, err := pluginenv.TenantNames(ctx, h.Host, tenants)
	if err != nil {
		return nil, err
	}
	ext := "csv"
	if in.Format == "parquet" {
		ext = "parquet"
	}
	return &focusOut{ContentDisposition: fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("focus-%s-%s.%s", rng.From, rng.To, ext)),
		Body: func(hc huma.Context) {
			r, w := humago.Unwrap(hc)
			if ext == "parquet" {
				h.streamFocus(w, r, ParquetType, tenants, names, rng, newParquetFocus)
				return
			}
			h.streamFocus(w, r, "text/csv; charset=utf-8", tenants, names, rng, newCSVFocus)
		}}, nil
}

// focusWriter writes the export's rows in one format.
type focusWriter interface {
	write(*focusRow) error
	// close writes what is buffered and ends the file.
	close() error
}

// streamFocus writes the export as the database cursor yields its rows,
// in the format newWriter makes. A failure before the first byte went
// out is answered as an error, without the attachment header; after it,
// the response is aborted, so the caller sees it break off rather than
// a file that looks complete.
func (h *Handlers) streamFocus(w http.ResponseWriter, r *http.Request, contentType string, tenants []string, names map[string]string, rng Range,
	newWriter func(io.Writer) (focusWriter, error)) {
	w.Header().Set("Content-Type", contentType)
	sent := &sentWriter{w: w}
	out, err := newWriter(sent)
	if err == nil {
		err = h.Store.EachFocusCost(r.Context(), tenants, rng, func(c FocusCost) error {
			row := focusRowOf(c, names[c.TenantID])
			return out.write(&row)
		})
	}
	if err == nil {
		err = out.close()
	}
	if err != nil {
		if !sent.any {
			w.Header().Del("Content-Disposition")
			sdk.WriteError(w, err)
			return
		}
		panic(http.ErrAbortHandler)
	}
}

// csvFocus writes the export as CSV.
type csvFocus struct {
	out    *csv.Writer
	record []string
	// day is the last row's day and dates its dates as text: the rows
	// come day by day, so they are rarely formatted again.
	day   time.Time
	dates [4]string
}

func newCSVFocus(w io.Writer) (focusWriter, error) {
	c := &csvFocus{out: csv.NewWriter(w), record: make([]string, 0, len(FocusColumns))}
	return c, c.out.Write(FocusColumns)
}

func (c *csvFocus) write(f *focusRow) error {
	if c.dates[0] == "" || !f.ChargePeriodStart.Equal(c.day) {
		c.day = f.ChargePeriodStart
		for i, t := range []time.Time{f.BillingPeriodEnd, f.BillingPeriodStart, f.ChargePeriodEnd, f.ChargePeriodStart} {
			c.dates[i] = t.Format(focusTime)
		}
	}
	c.record = f.csv(c.record, &c.dates)
	return c.out.Write(c.record)
}

func (c *csvFocus) close() error {
	c.out.Flush()
	return c.out.Error()
}

// parquetFocus writes the export as Parquet. The writer ends a row group
// at every focusRowGroup rows, writing it out.
type parquetFocus struct {
	out *parquet.GenericWriter[any]
	// rows hold the rows not yet handed to the writer, which takes them a
	// batch at a time; their space is reused.
	rows []parquet.Row
	n    int
}

func newParquetFocus(w io.Writer) (focusWriter, error) {
	out := parquet.NewGenericWriter[any](w, focusSchema, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(focusRowGroup))
	return &parquetFocus{out: out, rows: make([]parquet.Row, 256)}, nil
}

func (p *parquetFocus) write(f *focusRow) error {
	p.rows[p.n] = f.parquet(p.rows[p.n])
	if p.n++; p.n < len(p.rows) {
		return nil
	}
	return p.hand()
}

// hand gives the buffered rows to the writer.
func (p *parquetFocus) hand() error {
	_, err := p.out.WriteRows(p.rows[:p.n])
	p.n = 0
	return err
}

func (p *parquetFocus) close() error {
	if err := p.hand(); err != nil {
		return err
	}
	return p.out.Close()
}
