package protocol

import (
	"slices"
	"sync"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Calls are the requests a host has in flight at its plugins, each with the
// tenants its principal may see. A plugin that reads a dataset while it
// serves a request names the request (ReadDatasetRequest.request_id), and
// Narrow cuts the read down to those tenants: a handler that asks for a
// tenant its caller may not see gets nothing of it, whatever the handler's
// own checks missed. The host and plugintest both keep one.
//
// Request ids come from callers (a safe X-Request-Id is kept), so two
// requests in flight may share one; a read naming it then sees only the
// tenants every one of them may see, never more than its own request's.
type Calls struct {
	mu sync.Mutex
	m  map[string][]*callScope
}

type callScope struct{ tenants []string }

// Begin records a request in flight for principal p (nil for an anonymous
// caller, who may see no tenant); end forgets it once its response,
// streamed body included, is done. end may be called more than once.
func (c *Calls) Begin(requestID string, p *pluginv1.Principal) (end func()) {
	s := &callScope{tenants: p.GetTenantIds()}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string][]*callScope{}
	}
	c.m[requestID] = append(c.m[requestID], s)
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			rest := slices.DeleteFunc(c.m[requestID], func(x *callScope) bool { return x == s })
			if len(rest) == 0 {
				delete(c.m, requestID)
				return
			}
			c.m[requestID] = rest
		})
	}
}

// Narrow applies the request's scope to a dataset read. A read naming no
// request (a job's) is left as it is. A read naming a request in flight
// keeps the requested tenants that request may see, or all of them when it
// requested none. It reports false when the read may see no tenant at all:
// every tenant it asked for is outside the scope, the caller sees none, or
// the request is no longer in flight; the caller then answers with no
// records (an empty tenant list would mean every tenant).
func (c *Calls) Narrow(req *pluginv1.ReadDatasetRequest) bool {
	if req.RequestId == "" {
		return true
	}
	c.mu.Lock()
	scopes := c.m[req.RequestId]
	var visible []string
	if len(scopes) > 0 {
		visible = slices.Clone(scopes[0].tenants)
		for _, s := range scopes[1:] {
			visible = slices.DeleteFunc(visible, func(id string) bool { return !slices.Contains(s.tenants, id) })
		}
	}
	c.mu.Unlock()
	if len(req.TenantIds) == 0 {
		req.TenantIds = visible
	} else {
		req.TenantIds = slices.DeleteFunc(slices.Clone(req.TenantIds), func(id string) bool { return !slices.Contains(visible, id) })
	}
	return len(req.TenantIds) > 0
}
