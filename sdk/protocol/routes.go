package protocol

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Route patterns are absolute paths whose segments are literals or
// parameters: {name} matches exactly one non-empty segment, and {name...}
// is the same parameter under the name "name". The host's route table and
// the test harness match requests with these functions, so a plugin routes
// the same way in both.
//
// Within one plugin, a pattern may overlap another that it is more
// specific than (MoreSpecific): "/budgets/summary" beside
// "/budgets/{budget_id}". A request both match goes to the more specific
// one, as Go's ServeMux, which serves the routes inside the plugin, also
// decides. Patterns of different plugins never overlap.

// SplitPath splits a request path or a route pattern into its segments,
// ignoring the leading slash. A trailing slash is significant, as it is to
// the host's router: "/a/" is "a" and an empty segment, and matches only a
// pattern that ends in a slash too; "/" is one empty segment.
func SplitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// ParamName reports whether a pattern segment is a parameter, and its name.
func ParamName(seg string) (string, bool) {
	if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
		return strings.TrimSuffix(seg[1:len(seg)-1], "..."), true
	}
	return "", false
}

// MatchSegments matches the segments of a request path against those of a
// pattern, both as SplitPath returns them. It returns the path parameters,
// nil when the pattern has none.
func MatchSegments(pattern, path []string) (map[string]string, bool) {
	if len(pattern) != len(path) {
		return nil, false
	}
	var params map[string]string
	for i, s := range pattern {
		if name, ok := ParamName(s); ok {
			if path[i] == "" {
				return nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[name] = path[i]
			continue
		}
		if s != path[i] {
			return nil, false
		}
	}
	return params, true
}

// MatchPath matches a request path against a route pattern and returns the
// path parameters, nil when the pattern has none.
func MatchPath(pattern, path string) (map[string]string, bool) {
	return MatchSegments(SplitPath(pattern), SplitPath(path))
}

// PatternsOverlap reports whether one request path could match both
// patterns: they have as many segments, and equal literals wherever neither
// has a parameter. It errs on the side of a conflict ("/" and "/{id}"
// overlap although no path matches both). Methods are the caller's business.
func PatternsOverlap(a, b string) bool {
	sa, sb := SplitPath(a), SplitPath(b)
	if len(sa) != len(sb) {
		return false
	}
	for i := range sa {
		_, pa := ParamName(sa[i])
		_, pb := ParamName(sb[i])
		if !pa && !pb && sa[i] != sb[i] {
			return false
		}
	}
	return true
}

// MoreSpecific reports whether pattern a matches only paths that b matches
// too, and fewer: both have as many segments, a has a literal wherever b
// has one, the same literal, and a literal in at least one place where b
// has a parameter. "/x/special" is more specific than "/x/{id}"; of
// "/{a}/b" and "/a/{b}" neither is.
func MoreSpecific(a, b string) bool {
	sa, sb := SplitPath(a), SplitPath(b)
	if len(sa) != len(sb) {
		return false
	}
	more := false
	for i := range sa {
		_, pa := ParamName(sa[i])
		_, pb := ParamName(sb[i])
		switch {
		case pa && !pb, !pa && !pb && sa[i] != sb[i]:
			return false
		case !pa && pb:
			more = true
		}
	}
	return more
}

// PatternsConflict reports whether two patterns of one plugin cannot be
// routed side by side: they overlap and neither is more specific, so a
// request both match has no single route.
func PatternsConflict(a, b string) bool {
	return PatternsOverlap(a, b) && !MoreSpecific(a, b) && !MoreSpecific(b, a)
}

// CheckPattern reports what is wrong with a route pattern, nil when the
// host can route it: an absolute path without query or fragment, no empty
// segment but a trailing one, and parameters that are whole segments with
// distinct names, a {name...} one only at the end. The SDK checks a
// plugin's routes with it before serving, and the host before routing.
func CheckPattern(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q must start with /", p)
	}
	if strings.ContainsAny(p, "?#") {
		return fmt.Errorf("path %q must not hold a query or fragment", p)
	}
	segs := SplitPath(p)
	seen := map[string]bool{}
	for i, s := range segs {
		if s == "" && i < len(segs)-1 {
			return fmt.Errorf("path %q has an empty segment", p)
		}
		name, ok := ParamName(s)
		if !ok {
			if strings.ContainsAny(s, "{}") {
				return fmt.Errorf("path %q: segment %q must be a literal or a whole {parameter}", p, s)
			}
			continue
		}
		if !paramNameRE.MatchString(name) {
			return fmt.Errorf("path %q: parameter name %q is not an identifier", p, name)
		}
		if strings.HasSuffix(s, "...}") && i < len(segs)-1 {
			return fmt.Errorf("path %q: {%s...} must be the last segment", p, name)
		}
		if seen[name] {
			return fmt.Errorf("path %q: parameter %q appears twice", p, name)
		}
		seen[name] = true
	}
	return nil
}

// PluginPath is the path a request is sent to a plugin with, given the path
// as the caller sent it, which the host matched a route on: each segment
// decoded and percent-encoded again as net/url keeps it (url.PathEscape,
// and a "." or ".." segment encoded too). The plugin's router then splits
// it into the segments the host matched — an encoded slash stays inside its
// segment, no dot segment is resolved, no character makes it re-encode the
// path its own way — and decodes the path parameters the host checked. A
// segment that does not decode, which no route's parameter admits, is left
// as sent.
func PluginPath(raw string) string {
	segs := strings.Split(raw, "/")
	for i, s := range segs {
		v, err := url.PathUnescape(s)
		switch {
		case err != nil:
		case v == "." || v == "..":
			segs[i] = strings.Repeat("%2E", len(v))
		default:
			segs[i] = url.PathEscape(v)
		}
	}
	return strings.Join(segs, "/")
}

// PathParams lists the parameter names of a route pattern, in order.
func PathParams(p string) []string {
	var out []string
	for _, s := range SplitPath(p) {
		if name, ok := ParamName(s); ok {
			out = append(out, name)
		}
	}
	return out
}

var paramNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
