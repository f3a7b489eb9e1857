package allocation

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
)

// Handlers serves a brand's allocation rules and its chargeback by cost
// centre.
type Handlers struct {
	Store *Store
	// Host records the audit entry of each change of rules.
	Host   *sdk.Host
	Logger hclog.Logger
	// Now is the clock of the rules' updated_at; nil is time.Now.
	Now func() time.Time
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// BrandParams name the brand a route acts on. The host checks brand_id
// against the caller (a brand it cannot see is a 404) and narrows the
// caller's tenants to the brand's before the plugin sees the request.
type BrandParams struct {
	BrandID string        `query:"brand_id" required:"true" format:"uuid" doc:"The brand (GET /api/v1/brands). A brand the caller cannot see is a 404, as an unknown one is."`
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

// RuleSetView is a brand's rules as the routes answer them.
type RuleSetView struct {
	BrandID   string     `json:"brand_id" format:"uuid"`
	Rules     []Rule     `json:"rules" doc:"The rules in the order they are tried: a cost goes by the first it matches"`
	UpdatedBy *string    `json:"updated_by" nullable:"true" doc:"Who last replaced the rules; null when the brand has none"`
	UpdatedAt *time.Time `json:"updated_at" nullable:"true" doc:"When the rules were last replaced; null when the brand has none"`
}

type putRulesIn struct {
	BrandParams
	Body struct {
		Rules []Rule `json:"rules" nullable:"false" maxItems:"500" doc:"The brand's rules in order, replacing all of its rules; an empty list removes them"`
	}
}

type chargebackIn struct {
	BrandParams
	reports.ChargebackParams
}

// Chargeback is a brand's costs over a range by cost centre.
type Chargeback struct {
	BrandID     string                   `json:"brand_id" format:"uuid"`
	TenantIDs   []string                 `json:"tenant_ids" doc:"The tenants of the brand whose costs are allocated: those the caller may see, or those of tenant_ids"`
	StartDate   ledger.Day               `json:"start_date" format:"date"`
	EndDate     ledger.Day               `json:"end_date" format:"date"`
	Days        int                      `json:"days"`
	Metric      reports.Metric           `json:"metric" enum:"actual,amortized"`
	CostCentres []CentreCost             `json:"cost_centres" doc:"Each cost centre's charge per currency, by currency, then name, Unallocated last"`
	Totals      []reports.CurrencyAmount `json:"totals" doc:"The ledger's total of the tenants over the range per currency, which the cost centres' total_cost of that currency add up to exactly"`
	Reporting   Reporting                `json:"reporting" doc:"The chargeback in the installation's reporting currency: the ledger's costs converted day by day, as the summary's reporting total, and each cost centre's part of them"`
}

const tag = "costs"

const rulesPath = "/api/v1/costs/allocation/rules"

const chargebackDoc = "The costs of the brand's tenants (those the caller may see, or those of tenant_ids) from start_date to end_date (both inclusive), allocated by the brand's rules " +
	"(GET " + rulesPath + "): each cost of a resource (or of no resource) goes by the first rule it matches, whole to its cost centre or to its shared split; " +
	"a cost no rule matches, and a cost the ledger holds without its resource, is Unallocated. " +
	"A shared rule's costs are split per currency over the whole range, in cents: each cost centre gets its exact share rounded down, " +
	"and the cents left over go one each to the largest remainders, ties to the cost centre first by name (byte order); a credit is split as the cost it refunds. " +
	"A proportional split weighs each of its cost centres' direct cost in the currency (a negative one weighs nothing) and is even when none weighs anything. " +
	"For each currency, the cost centres' total_cost add up exactly to totals' total_cost, the ledger's (that of GET /api/v1/costs/summary for the same tenants and range). " +
	"As JSON (format=json, the default), or as CSV (format=csv): text/csv with a Content-Disposition attachment chargeback-<brand_id>-<start_date>-<end_date>.csv, " +
	"the header row " + csvHeaderDoc + " and a row per cost centre and currency in the JSON's order, amounts with two decimals; " +
	"a text cell that a spreadsheet would read as a formula (starting with =, +, -, @) is prefixed with an apostrophe."

const csvHeaderDoc = "brand_id,cost_centre,currency,direct_cost,shared_cost,total_cost"

var csvHeader = strings.Split(csvHeaderDoc, ",")

// Routes declares the allocation routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	tags := []string{tag}
	invalid := &huma.Response{Description: "A rule is invalid; each problem is named body.rules[i].<field>, and no rule changed"}
	return []sdk.Route{
		sdk.Get(rulesPath, sdk.Op{ID: "costs-allocation-rules", Tags: tags, Summary: "A brand's cost allocation rules",
			Description: "The rules in the order they are tried. Anyone who may see the brand may read them."}, h.rules),
		sdk.Put(rulesPath, sdk.Op{ID: "costs-allocation-rules-replace", Tags: tags, Auth: sdk.AuthAdmin, Summary: "Replace a brand's cost allocation rules",
			Description: "Replaces the brand's rules with the body's, in order, all or none: if any rule is invalid, the problem names each bad field " +
				"(body.rules[i].<field>) and the brand keeps its rules. A rule matches a subscription (subscription_id), a resource group of a subscription " +
				"(subscription_id and resource_group, without case), resources with a tag of a value (tag_key, stored in lower case, and tag_value), " +
				"or resources with a tag whose value names their cost centre (cost_centre_tag: tag_key). Every rule but a cost_centre_tag one names a cost_centre " +
				"or shares its cost (shared) between cost centres evenly, proportionally or by fixed percentages with at most two decimals adding up to 100. " +
				"Unallocated is reserved for the costs no rule matches. Admins only.",
			Responses: map[string]*huma.Response{"422": invalid}}, h.replace),
		sdk.Get("/api/v1/costs/allocation/chargeback", sdk.Op{ID: "costs-allocation-chargeback", Tags: tags, Summary: "Chargeback of a brand by cost centre",
			Description: chargebackDoc,
			Responses: map[string]*huma.Response{"200": {Description: "The brand's costs by cost centre as JSON, or as CSV with format=csv",
				Content: map[string]*huma.MediaType{
					"application/json": {Schema: sdk.SchemaOf(Chargeback{})},
					"text/csv":         {Schema: &huma.Schema{Type: huma.TypeString, Description: "Header row " + csvHeaderDoc + ", then one row per cost centre and currency"}},
				}}}}, h.chargeback),
	}
}

// view is the brand's rule set as the routes answer it.
func view(brandID string, set RuleSet) *RuleSetView {
	out := &RuleSetView{BrandID: brandID, Rules: set.Rules, UpdatedAt: set.UpdatedAt}
	if set.UpdatedAt != nil {
		out.UpdatedBy = &set.UpdatedBy
	}
	return out
}

func (h *Handlers) rules(ctx context.Context, in *BrandParams) (*RuleSetView, error) {
	set, err := h.Store.Rules(ctx, in.BrandID)
	if err != nil {
		return nil, err
	}
	return view(in.BrandID, set), nil
}

func (h *Handlers) replace(ctx context.Context, in *putRulesIn) (*RuleSetView, error) {
	rules := in.Body.Rules
	if rules == nil {
		rules = []Rule{}
	}
	if errs := Validate(rules); len(errs) > 0 {
		return nil, Invalid(errs)
	}
	by := sdk.PrincipalFrom(ctx).ID
	if err := h.Store.Replace(ctx, in.BrandID, rules, by, h.now()); err != nil {
		return nil, err
	}
	err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "cost_allocation.replace.success", Status: "success", ResourceType: "brand", ResourceID: in.BrandID,
		Details: map[string]any{"rules": len(rules)}})
	if err != nil && h.Logger != nil {
		h.Logger.Error("audit entry not recorded", "action", "cost_allocation.replace.success", "resource_id", in.BrandID, "error", err)
	}
	set, err := h.Store.Rules(ctx, in.BrandID)
	if err != nil {
		return nil, err
	}
	return view(in.BrandID, set), nil
}

// chargebackOut is the chargeback's answer: a stream, because the route
// answers either media type, with the CSV's attachment header.
type chargebackOut struct {
	ContentDisposition *string `header:"Content-Disposition" doc:"With format=csv: attachment; filename=\"chargeback-….csv\""`
	Body               func(huma.Context)
}

func (h *Handlers) chargeback(ctx context.Context, in *chargebackIn) (*chargebackOut, error) {
	rng, err := reports.DateRange(reports.RangeParams{StartDate: in.StartDate, EndDate: in.EndDate}, 0, 0)
	if err != nil {
		return nil, err
	}
	report, err := h.Store.Chargeback(ctx, in.BrandID, in.Tenants, rng, in.Metric)
	if err != nil {
		return nil, err
	}
	if in.Format == "csv" {
		disposition := fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("chargeback-%s-%s-%s.csv", in.BrandID, rng.From, rng.To))
		return &chargebackOut{ContentDisposition: &disposition, Body: func(hc huma.Context) {
			_, w := humago.Unwrap(hc)
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			out := csv.NewWriter(w)
			records := [][]string{csvHeader}
			for _, c := range report.CostCentres {
				records = append(records, []string{report.BrandID, reports.Cell(c.CostCentre), reports.Cell(c.Currency), c.DirectCost.String(), c.SharedCost.String(), c.TotalCost.String()})
			}
			// The caller gone midway sees the answer break off rather
			// than a file that looks complete.
			if err := out.WriteAll(records); err != nil {
				panic(http.ErrAbortHandler)
			}
		}}, nil
	}
	return &chargebackOut{Body: func(hc huma.Context) {
		_, w := humago.Unwrap(hc)
		sdk.WriteJSON(w, http.StatusOK, report)
	}}, nil
}
