// Package dashboards holds actord's Grafana dashboard (actord.json), with the
// Prometheus scrape configuration and Grafana provisioning files beside it
// (README.md explains their use), and reads the PromQL in the dashboard for
// the dashboard's lint test and for the CI test that evaluates every
// expression against a real Prometheus.
package dashboards

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Actord is the dashboard JSON (actord.json).
//
//go:embed actord.json
var Actord []byte

// ErrSyntax: an expression could not be tokenised (an unterminated string,
// an unbalanced bracket).
var ErrSyntax = errors.New("dashboards: PromQL syntax error")

// ErrMissingVariable is wrapped by Expand's error for a variable reference
// that has no value.
var ErrMissingVariable = errors.New("dashboards: no value for a variable")

// Dashboard is the part of a Grafana dashboard that the checks read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; rows hold nested panels when collapsed.
type Panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Datasource  *DatasourceRef  `json:"datasource"`
	GridPos     *GridPos        `json:"gridPos"`
	Targets     []Target        `json:"targets"`
	Panels      []Panel         `json:"panels"`
	FieldConfig json.RawMessage `json:"fieldConfig"`
}

// Unit returns fieldConfig.defaults.unit.
func (p *Panel) Unit() string {
	var fc struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	}
	if len(p.FieldConfig) == 0 || json.Unmarshal(p.FieldConfig, &fc) != nil {
		return ""
	}
	return fc.Defaults.Unit
}

// GridPos is a panel's position.
type GridPos struct{ H, W, X, Y int }

// DatasourceRef names a data source.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *DatasourceRef `json:"datasource"`
}

// Variable is a template variable. For a query variable, Query holds the
// query text (Grafana stores it as a string or as {"query": ...}).
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	RawQuery   json.RawMessage `json:"query"`
	Datasource *DatasourceRef  `json:"datasource"`
}

// Query returns the variable's query text.
func (v *Variable) Query() string {
	var s string
	if json.Unmarshal(v.RawQuery, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.RawQuery, &o) == nil {
		return o.Query
	}
	return ""
}

// Parse decodes a dashboard.
func Parse(b []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("dashboards: %w", err)
	}
	return &d, nil
}

// AllPanels returns every panel, rows' nested panels included, rows
// themselves included.
func (d *Dashboard) AllPanels() []*Panel {
	var out []*Panel
	var walk func(ps []Panel)
	walk = func(ps []Panel) {
		for i := range ps {
			out = append(out, &ps[i])
			walk(ps[i].Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Query is one PromQL expression of a panel.
type Query struct {
	PanelID    int
	PanelTitle string
	RefID      string
	Expr       string
}

// Queries returns every PromQL expression (every target's expr) of every panel.
func (d *Dashboard) Queries() []Query {
	var qs []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			qs = append(qs, Query{PanelID: p.ID, PanelTitle: p.Title, RefID: t.RefID, Expr: t.Expr})
		}
	}
	return qs
}

var varRef = regexp.MustCompile(`\$(?:\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|([A-Za-z0-9_]+))`)

// Expand replaces Grafana variable references ($name, ${name} and
// ${name:format}) with their values in vars; it returns an error wrapping
// ErrMissingVariable and naming every variable vars lacks.
func Expand(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: %s in %q", ErrMissingVariable, strings.Join(missing, ", "), expr)
	}
	return out, nil
}

// Selector is one use of a metric name in an expression.
type Selector struct {
	Metric string
	// Func is the function or aggregation whose argument list directly
	// holds the selector ("" at top level or in plain parentheses).
	Func string
	// Range is the text between the brackets of a range selector
	// ("" for an instant selector).
	Range string
}

// PromQL words that are not metric names where an identifier can stand.
var keywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

// labelListers are the keywords followed by a parenthesised label list.
var labelListers = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// aggregations may put "by (...)" or "without (...)" between their name and
// their argument list.
var aggregations = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

type token struct {
	kind byte // 'i' identifier, 'n' number, 's' string, 'v' Grafana variable, or the punctuation itself
	text string
}

// tokens splits a PromQL expression (with or without Grafana variables)
// into identifiers, numbers, strings, variables and single-character
// punctuation and operators.
func tokens(expr string) ([]token, error) {
	var ts []token
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // comment to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("%w: unterminated string in %q", ErrSyntax, expr)
			}
			ts = append(ts, token{'s', expr[i : j+1]})
			i = j + 1
		case c == '$':
			m := varRef.FindString(expr[i:])
			if m == "" {
				return nil, fmt.Errorf("%w: stray $ in %q", ErrSyntax, expr)
			}
			ts = append(ts, token{'v', m})
			i += len(m)
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			ts = append(ts, token{'i', expr[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isIdent(expr[j], false) || expr[j] == '.') {
				j++ // numbers and durations: 0.5, 1e3, 5m, 1h30m
			}
			ts = append(ts, token{'n', expr[i:j]})
			i = j
		default:
			ts = append(ts, token{c, string(c)})
			i++
		}
	}
	return ts, nil
}

// closing returns the index of the token closing the bracket at ts[i].
func closing(ts []token, i int) (int, error) {
	open, shut := ts[i].kind, map[byte]byte{'(': ')', '{': '}', '[': ']'}[ts[i].kind]
	depth := 0
	for j := i; j < len(ts); j++ {
		switch ts[j].kind {
		case open:
			depth++
		case shut:
			if depth--; depth == 0 {
				return j, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: unbalanced %q", ErrSyntax, string(open))
}

// Selectors returns every metric selector of a PromQL expression, with the
// function it is an argument of and its range. It knows enough PromQL for
// dashboards (functions, aggregations with by/without, binary operators
// with on/ignoring/group_left, label matchers, ranges, subqueries, offsets);
// Prometheus itself checks the full syntax in the CI integration test.
func Selectors(expr string) ([]Selector, error) {
	ts, err := tokens(expr)
	if err != nil {
		return nil, err
	}
	var sels []Selector
	stack := []string{} // enclosing call names ("" for plain parentheses)
	pending := ""       // name of the call whose '(' comes next
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		next := byte(0)
		if i+1 < len(ts) {
			next = ts[i+1].kind
		}
		switch t.kind {
		case 'i':
			switch {
			case labelListers[t.text]:
				if next == '(' {
					j, err := closing(ts, i+1)
					if err != nil {
						return nil, err
					}
					i = j
				}
			case t.text == "offset":
				i++ // skip the duration
			case keywords[t.text]:
			case next == '(':
				pending = t.text
			case aggregations[t.text] && i+1 < len(ts) && ts[i+1].kind == 'i' && labelListers[ts[i+1].text]:
				pending = t.text
			default:
				s := Selector{Metric: t.text}
				if len(stack) > 0 {
					s.Func = stack[len(stack)-1]
				}
				if next == '{' {
					j, err := closing(ts, i+1)
					if err != nil {
						return nil, err
					}
					i = j
				}
				if i+1 < len(ts) && ts[i+1].kind == '[' {
					j, err := closing(ts, i+1)
					if err != nil {
						return nil, err
					}
					var b strings.Builder
					for _, r := range ts[i+2 : j] {
						b.WriteString(r.text)
					}
					s.Range = b.String()
					i = j
				}
				sels = append(sels, s)
			}
		case '(':
			stack = append(stack, pending)
			pending = ""
		case ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("%w: unbalanced ) in %q", ErrSyntax, expr)
			}
			stack = stack[:len(stack)-1]
		case '{':
			// A selector without a metric name ({__name__=~"..."}) or a
			// stray brace: skip the matchers.
			j, err := closing(ts, i)
			if err != nil {
				return nil, err
			}
			i = j
		case '[':
			j, err := closing(ts, i) // subquery range
			if err != nil {
				return nil, err
			}
			i = j
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("%w: unbalanced ( in %q", ErrSyntax, expr)
	}
	return sels, nil
}
