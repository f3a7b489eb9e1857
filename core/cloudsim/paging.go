package cloudsim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// DefaultPageSize is how many items a simulated listing returns per page
// unless the request asks for fewer ($top); small enough that tests cross
// pages, as real listings do at scale.
const DefaultPageSize = 100

// Page is one page of a listing: the item range and the link to the next.
type Page struct {
	Start, End int
	// NextLink is the absolute URL of the next page, or empty.
	NextLink string
}

// PageOf cuts a listing of total items at the request's $skiptoken (an
// offset here; opaque to clients) and $top. A TruncatePages fault drops the
// next link.
func PageOf(r *http.Request, base string, total, pageSize int) Page {
	q := r.URL.Query()
	start, _ := strconv.Atoi(q.Get("$skiptoken"))
	if start < 0 || start > total {
		start = total
	}
	if top, err := strconv.Atoi(q.Get("$top")); err == nil && top > 0 && top < pageSize {
		pageSize = top
	}
	end := min(start+pageSize, total)
	p := Page{Start: start, End: end}
	if end < total && !faultOf(r).TruncatePages {
		next := *r.URL
		nq := next.Query()
		nq.Set("$skiptoken", strconv.Itoa(end))
		next.RawQuery = nq.Encode()
		u, _ := url.Parse(base)
		next.Scheme, next.Host = u.Scheme, u.Host
		p.NextLink = next.String()
	}
	return p
}

// WriteJSON answers 200 with v as JSON.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers in the Azure error envelope.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	writeError(w, status, code, message)
}

// TokensExpired reports whether an ExpireTokens fault applies to r.
func TokensExpired(r *http.Request) bool { return faultOf(r).ExpireTokens }
