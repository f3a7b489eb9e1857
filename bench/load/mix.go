package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// step is one request of a class and the status that answers it when all
// is well.
type step struct {
	method string
	path   string
	body   []byte
	form   bool // the body is a form; JSON otherwise
	auth   bool // with the admin's Bearer token
	want   int
}

// flow is one connection's sequence of requests of its class: next is the
// request to send, done hands it the answer (status 0 when none came) and
// a way to read its body.
type flow interface {
	next() step
	done(status int, body func() []byte)
}

// class is a kind of traffic: its connections each run a flow of their
// own, back to back.
type class struct {
	name  string
	about string
	// weight is the class's share of the connections.
	weight int
	// read marks the plugin reads the throughput and p99 targets name.
	read    bool
	newFlow func(t *target, conn int) flow
}

// target is what the flows need to know of the deployment: the admin's
// token, the dashboard's fragments and the tenants.
type target struct {
	token     string
	fragments []string
	tenants   []string
	// runID keeps budget names apart between the runs on one database.
	runID string
}

// get is a flow of GET requests, one path after the other.
func get(auth bool, paths ...string) func(*target, int) flow {
	return func(*target, int) flow {
		c := &cycle{}
		for _, p := range paths {
			c.steps = append(c.steps, step{method: http.MethodGet, path: p, auth: auth, want: http.StatusOK})
		}
		return c
	}
}

type cycle struct {
	steps []step
	i     int
}

func (c *cycle) next() step              { return c.steps[c.i%len(c.steps)] }
func (c *cycle) done(int, func() []byte) { c.i++ }

// classes are the mix. The weights give 64 connections as: 8 anonymous
// /health, 16 dashboards, 30 on the API's reads (6 on each read the
// throughput target names, 4 on each other), 6 budget writers and 4
// sign-ins.
var classes = []class{
	{name: "health", about: "GET /health, anonymous: the floor", weight: 8, newFlow: get(false, "/health")},
	{name: "dashboard", about: "GET /dashboard, then each fragment its slots load (hx-get), in turn", weight: 16,
		newFlow: func(t *target, conn int) flow {
			return get(true, append([]string{"/dashboard"}, t.fragments...)...)(t, conn)
		}},
	{name: "quotas", about: "GET /api/v1/resources/quotas", weight: 6, read: true, newFlow: get(true, "/api/v1/resources/quotas")},
	{name: "inventory", about: "GET /api/v1/resources/inventory", weight: 4, newFlow: get(true, "/api/v1/resources/inventory")},
	{name: "costs-summary", about: "GET /api/v1/costs/summary?period_days=30", weight: 6, read: true, newFlow: get(true, "/api/v1/costs/summary?period_days=30")},
	{name: "costs-trends", about: "GET /api/v1/costs/trends", weight: 4, newFlow: get(true, "/api/v1/costs/trends")},
	{name: "framework", about: "GET /api/v1/compliance/frameworks/soc2", weight: 6, read: true, newFlow: get(true, "/api/v1/compliance/frameworks/soc2")},
	{name: "compliance-summary", about: "GET /api/v1/compliance/summary", weight: 4, newFlow: get(true, "/api/v1/compliance/summary")},
	{name: "budget-writes", about: "POST /api/v1/budgets (a tenant budget, too large to raise an alert), then DELETE it", weight: 6,
		newFlow: func(t *target, conn int) flow { return &budgets{t: t, conn: conn} }},
	{name: "sign-in", about: "POST /api/v1/auth/login, the development admin's form", weight: 4, newFlow: func(*target, int) flow {
		body := url.Values{"username": {devUser}, "password": {devPassword}}.Encode()
		return &cycle{steps: []step{{method: http.MethodPost, path: "/api/v1/auth/login", body: []byte(body), form: true, want: http.StatusOK}}}
	}},
}

const (
	devUser     = "admin@steward.local"
	devPassword = "steward-dev"
)

// budgets creates a budget on one of the tenants in turn and deletes it.
type budgets struct {
	t    *target
	conn int
	seq  int
	id   string // the budget to delete next, if any
}

func (b *budgets) next() step {
	if b.id != "" {
		return step{method: http.MethodDelete, path: "/api/v1/budgets/" + b.id, auth: true, want: http.StatusNoContent}
	}
	body, _ := json.Marshal(map[string]any{
		"tenant_id":  b.t.tenants[(b.conn+b.seq)%len(b.t.tenants)],
		"name":       fmt.Sprintf("load %s %d-%d", b.t.runID, b.conn, b.seq),
		"amount":     10_000_000,
		"time_grain": "Monthly",
		"start_date": time.Now().UTC().Format("2006-01") + "-01",
		"thresholds": []map[string]int{{"percentage": 80}},
	})
	return step{method: http.MethodPost, path: "/api/v1/budgets", body: body, auth: true, want: http.StatusCreated}
}

func (b *budgets) done(status int, body func() []byte) {
	if b.id != "" {
		b.id = ""
		return
	}
	b.seq++
	if status == http.StatusCreated {
		var created struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(body(), &created) == nil {
			b.id = created.ID
		}
	}
}

// parseMix reads -mix, "name=weight,…", over the default weights; a weight
// of 0 leaves a class out.
func parseMix(s string) ([]class, error) {
	mix := slices.Clone(classes)
	if s == "" {
		return mix, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(w)
		i := slices.IndexFunc(mix, func(c class) bool { return c.name == name })
		if !ok || err != nil || n < 0 || i < 0 {
			return nil, fmt.Errorf("-mix: %q is not class=weight (classes: %s)", item, classNames())
		}
		mix[i].weight = n
	}
	mix = slices.DeleteFunc(mix, func(c class) bool { return c.weight == 0 })
	if len(mix) == 0 {
		return nil, fmt.Errorf("-mix leaves no class")
	}
	return mix, nil
}

func classNames() string {
	names := make([]string, len(classes))
	for i, c := range classes {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// share splits conns between the classes by weight (largest remainder),
// at least one each.
func share(mix []class, conns int) ([]int, error) {
	if conns < len(mix) {
		return nil, fmt.Errorf("%d connections cannot serve %d classes", conns, len(mix))
	}
	total := 0
	for _, c := range mix {
		total += c.weight
	}
	out := make([]int, len(mix))
	rest := map[int]float64{}
	given := 0
	for i, c := range mix {
		exact := float64(conns) * float64(c.weight) / float64(total)
		out[i] = max(1, int(exact))
		rest[i] = exact - float64(int(exact))
		given += out[i]
	}
	order := slices.SortedStableFunc(maps.Keys(rest), func(a, b int) int { return cmp.Compare(rest[b], rest[a]) })
	for k := 0; given < conns; k++ {
		out[order[k%len(order)]]++
		given++
	}
	// The floor of one each may give too many: take them from the largest.
	for ; given > conns; given-- {
		out[slices.Index(out, slices.Max(out))]--
	}
	return out, nil
}

// hxGet finds the fragments a page's slots load.
var hxGet = regexp.MustCompile(`hx-get="([^"]+)"`)

func fragmentsOf(page string) []string {
	var out []string
	for _, m := range hxGet.FindAllStringSubmatch(page, -1) {
		if p := html.UnescapeString(m[1]); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
