package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Problem is an RFC 9457 problem detail. Return one from a handler through
// WriteError; the host passes it to the caller unchanged.
type Problem struct {
	Type   string        `json:"type,omitempty"`
	Title  string        `json:"title"`
	Status int           `json:"status"`
	Detail string        `json:"detail,omitempty"`
	Errors []ErrorDetail `json:"errors,omitempty"`
}

// ErrorDetail names one invalid input.
type ErrorDetail struct {
	// Location is where the bad value was, e.g. "query.limit" or "body.name".
	Location string `json:"location"`
	Message  string `json:"message"`
	Value    any    `json:"value,omitempty"`
}

func (p *Problem) Error() string {
	if p.Detail != "" {
		return p.Title + ": " + p.Detail
	}
	return p.Title
}

// GetStatus is the problem's HTTP status, by which a typed route's handler
// answers with it.
func (p *Problem) GetStatus() int { return p.Status }

// ContentType is the media type a problem is written as.
func (p *Problem) ContentType(string) string { return "application/problem+json" }

func newProblem(status int, detail string) *Problem {
	return &Problem{Title: http.StatusText(status), Status: status, Detail: detail}
}

// NotFound is a 404 problem.
func NotFound(detail string) *Problem { return newProblem(http.StatusNotFound, detail) }

// Forbidden is a 403 problem.
func Forbidden(detail string) *Problem { return newProblem(http.StatusForbidden, detail) }

// Conflict is a 409 problem.
func Conflict(detail string) *Problem { return newProblem(http.StatusConflict, detail) }

// Unavailable is a 503 problem.
func Unavailable(detail string) *Problem { return newProblem(http.StatusServiceUnavailable, detail) }

// BadRequest is a 400 problem.
func BadRequest(detail string) *Problem { return newProblem(http.StatusBadRequest, detail) }

// Invalid is a 422 problem naming the invalid input.
func Invalid(location, format string, args ...any) *Problem {
	msg := fmt.Sprintf(format, args...)
	p := newProblem(http.StatusUnprocessableEntity, "validation failed: "+location+": "+msg)
	p.Errors = []ErrorDetail{{Location: location, Message: msg}}
	return p
}

// WriteError writes err as problem+json. A *Problem keeps its status; any
// other error is a 500 whose detail does not leak the error text.
func WriteError(w http.ResponseWriter, err error) {
	var p *Problem
	if !errors.As(err, &p) {
		p = newProblem(http.StatusInternalServerError, "internal error")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// WriteJSON writes v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
