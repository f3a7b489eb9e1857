package checks

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/sdk"
)

// Handlers serves the partner reads.
type Handlers struct {
	Catalogue *catalogue.Catalogue
	Store     *Store
	// Host names the tenants.
	Host *sdk.Host
	// Now is the clock days left and the trend count from; nil is
	// time.Now.
	Now func() time.Time
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

const tag = "partner"

// TenantMaturity is a tenant's latest assessment.
type TenantMaturity struct {
	TenantID         string    `json:"tenant_id"`
	TenantName       string    `json:"tenant_name"`
	Date             string    `json:"date" doc:"Day (UTC) of the assessment"`
	Maturity         float64   `json:"maturity" doc:"Priority-weighted share of the requirements met, 0 to 5"`
	MeetsTarget      bool      `json:"meets_target" doc:"maturity is at least the programme's target maturity"`
	Requirements     int       `json:"requirements"`
	Met              int       `json:"met"`
	NotMet           int       `json:"not_met"`
	Unknown          int       `json:"unknown"`
	AwaitingEvidence int       `json:"awaiting_evidence"`
	Gaps             int       `json:"gaps" doc:"Requirements not met"`
	CriticalGaps     int       `json:"critical_gaps" doc:"Critical requirements not met"`
	CheckedAt        time.Time `json:"checked_at"`
}

// Programme is the programme's summary with a page of its tenants.
type Programme struct {
	Partner        string           `json:"partner"`
	Description    string           `json:"description"`
	Deadline       string           `json:"deadline" format:"date"`
	DaysLeft       int              `json:"days_left" doc:"Days from today (UTC) to the deadline; negative once it has passed"`
	TargetMaturity float64          `json:"target_maturity"`
	MaxMaturity    float64          `json:"max_maturity" doc:"Top of the maturity scale"`
	Requirements   int              `json:"requirements" doc:"Requirements in the catalogue"`
	Items          []TenantMaturity `json:"items" doc:"The tenants' latest assessments; a tenant never assessed is absent"`
	Total          int              `json:"total"`
	Limit          int              `json:"limit"`
	Offset         int              `json:"offset"`
}

// RequirementList is a page of the catalogue.
type RequirementList struct {
	Items  []catalogue.Requirement `json:"items"`
	Total  int                     `json:"total"`
	Limit  int                     `json:"limit"`
	Offset int                     `json:"offset"`
}

// ResultItem is a requirement's status for a tenant at its latest
// assessment.
type ResultItem struct {
	TenantID      string   `json:"tenant_id"`
	Date          string   `json:"date"`
	RequirementID string   `json:"requirement_id"`
	Title         string   `json:"title"`
	Category      string   `json:"category"`
	Priority      string   `json:"priority" enum:"critical,high,medium,low"`
	Status        string   `json:"status" enum:"met,not_met,unknown,awaiting_evidence"`
	CheckStatus   string   `json:"check_status" enum:"met,not_met,unknown,none" doc:"The automatic check's outcome; none without a check"`
	Metric        string   `json:"metric" doc:"The check's metric; empty without a check"`
	Framework     string   `json:"framework"`
	Value         *float64 `json:"value" doc:"The metric's value in percent; null without a check or when it is unknown"`
	Target        *float64 `json:"target" doc:"The check's target (value >= target); null without a check"`
	Reason        string   `json:"reason" doc:"Why an unknown check has no value"`
	// EvidenceStatus is empty while the plugin has no evidence part.
	EvidenceStatus string   `json:"evidence_status" doc:"The tenant's evidence status for the requirement; empty without evidence"`
	Evidence       []string `json:"expected_evidence"`
}

// ResultList is a page of results.
type ResultList struct {
	Items  []ResultItem `json:"items"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// TrendPoint is a tenant's maturity on a day.
type TrendPoint struct {
	Date           string  `json:"date"`
	TenantID       string  `json:"tenant_id"`
	TenantName     string  `json:"tenant_name"`
	Maturity       float64 `json:"maturity"`
	TargetMaturity float64 `json:"target_maturity"`
	Met            int     `json:"met"`
	Gaps           int     `json:"gaps"`
	DaysLeft       int     `json:"days_left" doc:"Days to the deadline on the day"`
}

// Order is a list's page and order; each route's own sort_by names what
// it sorts by.
type Order struct {
	Limit     int    `query:"limit" minimum:"1" maximum:"500" default:"50" doc:"Page size"`
	Offset    int    `query:"offset" minimum:"0" default:"0"`
	SortOrder string `query:"sort_order" enum:"asc,desc" default:"asc"`
}

func (o Order) window(sortBy string) Window {
	return Window{Limit: o.Limit, Offset: o.Offset, SortBy: sortBy, Desc: o.SortOrder == "desc"}
}

// The sort_by enums are the keys of SnapshotSorts and ResultSorts.
type programmeIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Order
	SortBy string `query:"sort_by" enum:"checked_at,critical_gaps,gaps,maturity" default:"maturity" doc:"Order of the list"`
}

// Requirement narrows a list to a priority and a category.
type Requirement struct {
	Priority string `query:"priority" enum:"critical,high,medium,low" doc:"Only requirements of this priority"`
	Category string `query:"category" maxLength:"64" doc:"Only requirements of this category"`
}

type requirementsIn struct {
	Requirement
	Order
	SortBy string `query:"sort_by" enum:"priority,id,category" default:"priority" doc:"Order of the list"`
}

type resultsIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Status  string        `query:"status" enum:"not_met,unknown,awaiting_evidence,met" doc:"Only requirements of this status"`
	Requirement
	GapsOnly bool `query:"gaps_only" default:"false" doc:"Only requirements not met"`
	Order
	SortBy string `query:"sort_by" enum:"category,priority,requirement_id,status,value" default:"priority" doc:"Order of the list"`
}

type trendIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Days    int           `query:"days" minimum:"1" maximum:"365" default:"30" doc:"Days up to today"`
}

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	op := func(id, summary, doc string) sdk.Op {
		return sdk.Op{ID: "partner-" + id, Tags: []string{tag}, Summary: summary, Description: doc}
	}
	maturityDoc := " Maturity is the priority-weighted share of the requirements met on 0 to 5 (critical weighs 4, high 3, medium 2, low 1); " +
		"a requirement is met when its automatic check reaches its target or, without a check, its evidence is accepted."
	return []sdk.Route{
		sdk.Get("/api/v1/partner/programme", op("programme", "The partner programme and each tenant's maturity",
			"The partner, its deadline with the days left, the target maturity, and a page of the tenants' latest assessments with their gaps."+maturityDoc), h.programme),
		sdk.Get("/api/v1/partner/requirements", op("requirements", "The requirements catalogue, paginated",
			"The partner's requirements with their priority, the evidence expected and the automatic check, if any; sorted by priority (then id) by default."), h.requirements),
		sdk.Get("/api/v1/partner/results", op("results", "Each tenant's requirements with their status, paginated",
			"The requirements as each tenant's latest assessment found them: status (met, not_met, unknown, awaiting_evidence), the check's value "+
				"and target, the reason an unknown check has no value. gaps_only keeps the requirements not met; the default order is by priority."), h.results),
		sdk.Get("/api/v1/partner/maturity-trend", op("maturity-trend", "Each tenant's daily maturity",
			"One point per tenant and day with an assessment over the last `days` days (today included), oldest first."+maturityDoc), h.trend),
	}
}

func (h *Handlers) programme(ctx context.Context, in *programmeIn) (*Programme, error) {
	win := in.window(in.SortBy)
	snaps, total, err := h.Store.Latest(ctx, in.Tenants, win)
	if err != nil {
		return nil, err
	}
	items, err := h.maturities(ctx, snaps)
	if err != nil {
		return nil, err
	}
	p := h.Catalogue.Programme
	return &Programme{Partner: p.Partner, Description: p.Description, Deadline: p.Deadline.Format(time.DateOnly),
		DaysLeft: DaysLeft(p.Deadline, h.now()), TargetMaturity: p.TargetMaturity, MaxMaturity: catalogue.MaxMaturity,
		Requirements: len(h.Catalogue.Requirements), Items: items, Total: total, Limit: win.Limit, Offset: win.Offset}, nil
}

// maturities are the snapshots with their tenants' names, measured
// against the programme's target as it stands now.
func (h *Handlers) maturities(ctx context.Context, snaps []Snapshot) ([]TenantMaturity, error) {
	ids := make([]string, len(snaps))
	for i, s := range snaps {
		ids[i] = s.TenantID
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, ids)
	if err != nil {
		return nil, err
	}
	out := make([]TenantMaturity, len(snaps))
	for i, s := range snaps {
		out[i] = TenantMaturity{TenantID: s.TenantID, TenantName: names[s.TenantID], Date: s.Day, Maturity: s.Maturity,
			MeetsTarget: s.Maturity >= h.Catalogue.Programme.TargetMaturity, Requirements: s.Requirements, Met: s.Met, NotMet: s.NotMet,
			Unknown: s.Unknown, AwaitingEvidence: s.AwaitingEvidence, Gaps: s.Gaps, CriticalGaps: s.CriticalGaps, CheckedAt: s.CheckedAt.UTC()}
	}
	return out, nil
}

func (h *Handlers) requirements(_ context.Context, in *requirementsIn) (*RequirementList, error) {
	win := in.window(in.SortBy)
	items := []catalogue.Requirement{}
	for _, req := range h.Catalogue.Requirements {
		if (in.Priority == "" || string(req.Priority) == in.Priority) && (in.Category == "" || req.Category == in.Category) {
			items = append(items, req)
		}
	}
	slices.SortStableFunc(items, func(a, b catalogue.Requirement) int {
		c := 0
		switch win.SortBy {
		case "id":
			c = strings.Compare(a.ID, b.ID)
		case "category":
			c = strings.Compare(a.Category, b.Category)
		default:
			c = cmp.Compare(a.Priority.Rank(), b.Priority.Rank())
		}
		if win.Desc {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.ID, b.ID))
	})
	total := len(items)
	items = items[min(win.Offset, total):min(win.Offset+win.Limit, total)]
	return &RequirementList{Items: items, Total: total, Limit: win.Limit, Offset: win.Offset}, nil
}

// resultFilter is the results route's filter: the tenants, the status
// (gaps_only keeps the statuses but met), the priority and the category.
func (h *Handlers) resultFilter(in *resultsIn) ResultFilter {
	f := ResultFilter{Tenants: in.Tenants, Priority: in.Priority, Category: in.Category}
	for _, req := range h.Catalogue.Requirements {
		f.Requirements = append(f.Requirements, req.ID)
	}
	if in.Status != "" {
		f.Statuses = []string{in.Status}
	}
	if in.GapsOnly {
		if len(f.Statuses) == 0 {
			f.Statuses = Statuses
		}
		f.Statuses = slices.DeleteFunc(slices.Clone(f.Statuses), func(s string) bool { return s == StatusMet })
		if len(f.Statuses) == 0 {
			// status=met with gaps_only asks for nothing.
			f.Requirements = nil
		}
	}
	return f
}

func (h *Handlers) results(ctx context.Context, in *resultsIn) (*ResultList, error) {
	win := in.window(in.SortBy)
	rows, total, err := h.Store.Results(ctx, h.resultFilter(in), win)
	if err != nil {
		return nil, err
	}
	return &ResultList{Items: h.Items(rows), Total: total, Limit: win.Limit, Offset: win.Offset}, nil
}

// Items are result rows with their requirements' titles and expected
// evidence from the catalogue.
func (h *Handlers) Items(rows []ResultRow) []ResultItem {
	out := make([]ResultItem, len(rows))
	for i, row := range rows {
		req, _ := h.Catalogue.Requirement(row.RequirementID)
		out[i] = ResultItem{TenantID: row.TenantID, Date: row.Day, RequirementID: row.RequirementID, Title: req.Title, Category: row.Category,
			Priority: row.Priority, Status: row.Status, CheckStatus: row.CheckStatus, Metric: row.Metric, Framework: row.Framework,
			Value: row.Value, Target: row.Target, Reason: row.Reason, EvidenceStatus: row.EvidenceStatus, Evidence: req.Evidence}
	}
	return out
}

func (h *Handlers) trend(ctx context.Context, in *trendIn) (*[]TrendPoint, error) {
	from := h.now().AddDate(0, 0, 1-in.Days).Format(time.DateOnly)
	snaps, err := h.Store.Trend(ctx, in.Tenants, from)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(snaps))
	for i, s := range snaps {
		ids[i] = s.TenantID
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, ids)
	if err != nil {
		return nil, err
	}
	out := make([]TrendPoint, len(snaps))
	for i, s := range snaps {
		out[i] = TrendPoint{Date: s.Day, TenantID: s.TenantID, TenantName: names[s.TenantID], Maturity: s.Maturity, TargetMaturity: s.TargetMaturity,
			Met: s.Met, Gaps: s.Gaps, DaysLeft: s.DaysLeft}
	}
	return &out, nil
}
