package protocol

import "strings"

// Route patterns are absolute paths whose segments are literals or
// parameters: {name} matches exactly one non-empty segment, and {name...}
// is the same parameter under the name "name". The host's route table and
// the test harness match requests with these functions, so a plugin routes
// the same way in both.

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
