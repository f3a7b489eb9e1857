package cloudsim

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is misbehaviour injected on the routes of a service whose path
// starts with a prefix — the failures real providers show.
type Fault struct {
	// Latency delays each matching response.
	Latency time.Duration `json:"latency"`
	// Status, when set, answers with that status (429, 500, 503…) instead
	// of serving, with RetryAfter in a Retry-After header when set.
	Status     int           `json:"status"`
	RetryAfter time.Duration `json:"retry_after"`
	// Times bounds how many requests the fault hits; 0 means all of them.
	Times int `json:"times"`
	// Skip lets that many matching requests through before the fault
	// hits, so a listing fails after its first pages.
	Skip int `json:"skip"`
	// TruncatePages drops the nextLink of paged answers, as a provider
	// that cuts a listing short does.
	TruncatePages bool `json:"truncate_pages"`
	// ExpireTokens makes the service reject every bearer token with 401.
	ExpireTokens bool `json:"expire_tokens"`
}

// Faults is the set of injected faults, safe for concurrent use.
type Faults struct {
	mu    sync.Mutex
	rules []*rule
	hits  map[string]int
}

type rule struct {
	svc    Service
	prefix string
	fault  Fault
	left   int
	skip   int
}

func newFaults() *Faults { return &Faults{hits: map[string]int{}} }

// Set injects a fault on the service's routes under prefix, replacing any
// fault on the same prefix.
func (f *Faults) Set(svc Service, prefix string, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if r.svc == svc && r.prefix == prefix {
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
			break
		}
	}
	f.rules = append(f.rules, &rule{svc: svc, prefix: prefix, fault: fault, left: fault.Times, skip: fault.Skip})
}

// Clear removes every fault.
func (f *Faults) Clear() {
	f.mu.Lock()
	f.rules = nil
	f.mu.Unlock()
}

// Hits counts the requests a service answered on paths under prefix, so
// tests can see retries and paging.
func (f *Faults) Hits(svc Service, prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, v := range f.hits {
		s, path, _ := strings.Cut(k, " ")
		if Service(s) == svc && strings.HasPrefix(path, prefix) {
			n += v
		}
	}
	return n
}

// take returns the fault that applies to a request and uses one of its
// times.
func (f *Faults) take(svc Service, path string) (Fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits[string(svc)+" "+path]++
	for _, r := range f.rules {
		if r.svc != svc || !strings.HasPrefix(path, r.prefix) {
			continue
		}
		if r.skip > 0 {
			r.skip--
			continue
		}
		if r.fault.Times > 0 {
			if r.left == 0 {
				continue
			}
			r.left--
		}
		return r.fault, true
	}
	return Fault{}, false
}

type faultKey struct{}

func contextWithFault(r *http.Request, f Fault) context.Context {
	return context.WithValue(r.Context(), faultKey{}, f)
}

// faultOf returns the fault applied to the request, for handlers that
// truncate pages or check tokens.
func faultOf(r *http.Request) Fault {
	f, _ := r.Context().Value(faultKey{}).(Fault)
	return f
}

func (f *Faults) middleware(svc Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_sim/") {
			next.ServeHTTP(w, r)
			return
		}
		fault, ok := f.take(svc, r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if fault.Latency > 0 {
			select {
			case <-time.After(fault.Latency):
			case <-r.Context().Done():
				return
			}
		}
		if fault.Status != 0 {
			if fault.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int((fault.RetryAfter+time.Second-1)/time.Second)))
			}
			writeError(w, fault.Status, "SimulatedFault", http.StatusText(fault.Status))
			return
		}
		next.ServeHTTP(w, r.WithContext(contextWithFault(r, fault)))
	})
}

func (f *Faults) handleSet(svc Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prefix string `json:"prefix"`
			Fault
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Prefix == "" {
			writeError(w, http.StatusBadRequest, "InvalidFault", "body must be {\"prefix\": \"/path\", …fault fields}")
			return
		}
		f.Set(svc, req.Prefix, req.Fault)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *Faults) handleClear(w http.ResponseWriter, _ *http.Request) {
	f.Clear()
	w.WriteHeader(http.StatusNoContent)
}

// writeError answers in the Azure error envelope:
// {"error": {"code": "...", "message": "..."}}.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}
