package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/store"
)

// runSetup deploys s on a world, waits for the start-up syncs, and runs
// the mix at each connection count on the same hosts.
func runSetup(ctx context.Context, o *options, s setup, worldName, worldFile string) ([]summaryRow, error) {
	fmt.Printf("## %s — %s world\n\n", s.about, worldName)
	t0 := time.Now()
	d, err := deploy(ctx, o, s, worldName, worldFile)
	if err != nil {
		return nil, err
	}
	defer d.close()
	fmt.Printf("Ready in %.1f s: %s\n", time.Since(t0).Seconds(), d.describe())

	p := &prober{dbName: d.dbName}
	for _, r := range d.replicas {
		p.hosts = append(p.hosts, r.cmd.Process.Pid)
	}
	if s.postgres {
		if p.pg, err = store.Open(ctx, o.postgresURL, store.Options{MaxOpenConns: 1}); err != nil {
			return nil, err
		}
		defer p.pg.Close()
	}

	t := &target{runID: fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000)}
	if t.token, err = login(d.base); err != nil {
		return nil, err
	}
	wantTenants := 5
	if worldFile != "" {
		wantTenants = o.tenants
	}
	t1 := time.Now()
	if err := waitForSyncs(ctx, d.base, t.token, wantTenants, o.syncTimeout); err != nil {
		return nil, fmt.Errorf("%w\nfirst replica's log:\n%s", err, tail(d.replicas[0].logPath, 20))
	}
	fmt.Printf("Start-up syncs of %d tenants done in %.1f s\n\n", wantTenants, time.Since(t1).Seconds())
	page, err := apiGet(d.base, t.token, "/dashboard")
	if err != nil {
		return nil, err
	}
	if t.fragments = fragmentsOf(string(page)); len(t.fragments) == 0 {
		return nil, errors.New("the dashboard loads no fragment")
	}
	var tenants []struct {
		ID string `json:"id"`
	}
	if err := apiJSON(d.base, t.token, "/api/v1/tenants", &tenants); err != nil {
		return nil, err
	}
	for _, tn := range tenants {
		t.tenants = append(t.tenants, tn.ID)
	}
	if len(t.tenants) == 0 {
		return nil, errors.New("no tenants")
	}

	var rows []summaryRow
	for _, conns := range o.conns {
		shares, err := share(o.mix, conns)
		if err != nil {
			return rows, err
		}
		var open, closing snapshot
		var pgErr error
		profiled := func() error { return nil }
		var warmed time.Duration
		results, elapsed, err := drive(ctx, d.base, t, o.mix, shares, func() { warmed = p.warm(ctx, o.warmup) }, o.window,
			func() {
				fmt.Fprintf(os.Stderr, "%s: window open after a %s warm-up, %d connections, %s (hosts %v)\n",
					time.Now().Format(time.TimeOnly), warmed.Round(time.Second), conns, o.window, p.hosts)
				open = p.take()
				pgErr = p.takePostgres(ctx, &open, open.at)
				if o.hostProfileDir != "" {
					profiled = d.profile(ctx, filepath.Join(o.hostProfileDir, fmt.Sprintf("%s-%s-%dc", s.name, worldName, conns)), o.window)
				}
			},
			func() { closing = p.take() })
		if err != nil {
			return rows, err
		}
		if err := profiled(); err != nil {
			return rows, fmt.Errorf("host profiles: %w", err)
		}
		// PostgreSQL counts a session when its backend first reports its
		// statistics, within a second of going idle.
		sleep(ctx, 1500*time.Millisecond)
		if err := errors.Join(pgErr, p.takePostgres(ctx, &closing, open.at)); err != nil {
			return rows, fmt.Errorf("PostgreSQL statistics: %w", err)
		}
		row := summaryRow{setup: s, world: worldName, tenants: len(t.tenants), conns: conns, loadavg: open.loadavg,
			results: results, elapsed: elapsed, cpu: p.cpu(open, closing), postgres: s.postgres,
			sessions: closing.sessions - open.sessions, backends: [2]int64{open.backends, closing.backends}, fresh: closing.fresh, warmed: warmed}
		row.print(t.fragments)
		rows = append(rows, row)
	}
	return rows, nil
}

// profile takes a CPU profile of every replica for the window, through its
// runtime profiles' address, into <base>-r<replica>.cpu.pprof; the
// returned function waits for them.
func (d *deployment) profile(ctx context.Context, base string, window time.Duration) (wait func() error) {
	errs := make(chan error, len(d.replicas))
	for i, r := range d.replicas {
		go func() {
			if r.debug == "" {
				errs <- fmt.Errorf("replica %d logged no profiles address", i)
				return
			}
			errs <- fetchProfile(ctx, fmt.Sprintf("%sprofile?seconds=%d", r.debug, max(1, int(window.Seconds()))), fmt.Sprintf("%s-r%d.cpu.pprof", base, i))
		}()
	}
	return func() error {
		var all []error
		for range d.replicas {
			all = append(all, <-errs)
		}
		return errors.Join(all...)
	}
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func (d *deployment) describe() string {
	var pids []string
	for _, r := range d.replicas {
		pids = append(pids, fmt.Sprintf("%s (pid %d)", r.base, r.cmd.Process.Pid))
	}
	s := "host " + strings.Join(pids, ", ")
	if d.proxy != nil {
		s += "; balancer " + d.base
	}
	if d.dbName != "" {
		s += "; database " + d.dbName + ", Redis prefix " + d.prefix
	}
	return s
}

// apiClient makes the preparation's few requests; a stuck host must not
// hang the tool.
var apiClient = &http.Client{Timeout: time.Minute}

// login signs in with the development pair and returns the access token.
func login(base string) (string, error) {
	form := url.Values{"username": {devUser}, "password": {devPassword}}
	resp, err := apiClient.PostForm(base+"/api/v1/auth/login", form)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("sign-in: %d %s", resp.StatusCode, b)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	return tok.AccessToken, json.Unmarshal(b, &tok)
}

func apiGet(base, token, path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := apiClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %.300s", path, resp.StatusCode, b)
	}
	return b, nil
}

func apiJSON(base, token, path string, v any) error {
	b, err := apiGet(base, token, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// syncStatus is GET /api/v1/sync/status as far as the wait reads it.
type syncStatus struct {
	Jobs []struct {
		Plugin  string `json:"plugin"`
		Name    string `json:"name"`
		Running int    `json:"running"`
		Queued  int    `json:"queued"`
		LastRun *struct {
			Status       string  `json:"status"`
			ErrorMessage *string `json:"error_message"`
		} `json:"last_run"`
	} `json:"jobs"`
}

// freshness is one tenant in GET /api/v1/health/data.
type freshness struct {
	Stale    bool              `json:"stale"`
	Problems map[string]string `json:"problems"`
}

// waitForSyncs waits until the start-up syncs are done: no run is queued
// or running, and every one of the want tenants has fresh data of every
// domain and no problem, on two polls a second apart (a finished sync can
// queue another, such as the partner assessment after identity and
// compliance).
func waitForSyncs(ctx context.Context, base, token string, want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	calm := 0
	pending := "nothing read yet"
	for time.Now().Before(deadline) {
		var st syncStatus
		fresh := map[string]json.RawMessage{}
		err := errors.Join(apiJSON(base, token, "/api/v1/sync/status", &st), apiJSON(base, token, "/api/v1/health/data", &fresh))
		if err == nil {
			var busy, stale []string
			for _, j := range st.Jobs {
				if j.Running+j.Queued > 0 {
					busy = append(busy, j.Plugin+"/"+j.Name)
				}
				if j.LastRun != nil && j.LastRun.Status == "failed" && j.LastRun.ErrorMessage != nil {
					stale = append(stale, j.Plugin+"/"+j.Name+" failed: "+*j.LastRun.ErrorMessage)
				}
			}
			tenants := 0
			for name, raw := range fresh {
				var f freshness
				if json.Unmarshal(raw, &f) != nil {
					continue
				}
				tenants++
				if f.Stale || len(f.Problems) > 0 {
					stale = append(stale, fmt.Sprintf("%s %v", name, f.Problems))
				}
			}
			if tenants < want {
				stale = append(stale, fmt.Sprintf("%d of %d tenants registered", tenants, want))
			}
			slices.Sort(stale)
			pending = fmt.Sprintf("running or queued: %v; not fresh: %d (%s)", busy, len(stale), strings.Join(stale[:min(len(stale), 3)], "; "))
			if len(busy) == 0 && len(stale) == 0 {
				if calm++; calm == 2 {
					return nil
				}
			} else {
				calm = 0
			}
		} else {
			pending = err.Error()
		}
		sleep(ctx, time.Second)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("the start-up syncs were not done after %s: %s", limit, pending)
}
