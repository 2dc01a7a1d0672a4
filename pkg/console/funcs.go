package console

import (
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/procstate"
)

// funcs are the templates' functions.
func (s *Server) funcs() template.FuncMap {
	return template.FuncMap{
		// t shows a time in the airport zone; wall is a wall-clock time already in airport time
		// (timestamp without time zone columns).
		"t": func(v any) string {
			switch x := v.(type) {
			case time.Time:
				if x.IsZero() {
					return "—"
				}
				return x.In(s.d.Location).Format("2006-01-02 15:04:05 MST")
			case *time.Time:
				if x == nil || x.IsZero() {
					return "—"
				}
				return x.In(s.d.Location).Format("2006-01-02 15:04:05 MST")
			}
			return fmt.Sprint(v)
		},
		"wall": func(v *time.Time) string {
			if v == nil {
				return "—"
			}
			return v.Format("2006-01-02 15:04:05") + " " + s.d.Now().In(s.d.Location).Format("MST")
		},
		// local is a wall-clock time of the flight's columns (timestamp without time zone:
		// airport time already), without a zone, as the page's header names it.
		"local": func(v *time.Time) string {
			if v == nil {
				return "—"
			}
			return v.Format("2006-01-02 15:04")
		},
		"age":    s.age,
		"advice": advice,
		// minutes names a rate window: "5 min", "1 h".
		"minutes": func(d time.Duration) string {
			if d >= time.Hour && d%time.Hour == 0 {
				return strconv.Itoa(int(d.Hours())) + " h"
			}
			return strconv.Itoa(int(d.Minutes())) + " min"
		},
		"classes": func() []procstate.Class { return procstate.ReplayableClasses },
		"join":    joinIDs,
		"add":     func(a, b int) int { return a + b },
		// replayableClass: replay may take a message of the class (NO-MATCH: by id, once the
		// flight exists).
		"replayableClass": replayableClass,
		// groupURL is the dead letters narrowed to one group; pageURL a page of a filter. Both
		// are built by url.Values.Encode, so they are safe as they are.
		"groupURL": func(f deadFilter, g string) template.URL { f.Group = g; return template.URL("/dead?" + f.query()) },
		// listURL is a list's path with its query (built by url.Values.Encode) and, page > 0, a page.
		"listURL": func(path, q string, page int) template.URL {
			v, _ := url.ParseQuery(q)
			if page > 0 {
				v.Set("page", strconv.Itoa(page))
			}
			return template.URL(path + "?" + v.Encode())
		},
		"pageURL": func(q string, page int) template.URL {
			v, _ := url.ParseQuery(q)
			v.Set("page", strconv.Itoa(page))
			return template.URL("/dead?" + v.Encode())
		},
	}
}

// age is how long ago a time was, or a duration in seconds ("—" for nil).
func (s *Server) age(v any) string {
	var d time.Duration
	switch x := v.(type) {
	case time.Time:
		d = s.d.Now().Sub(x)
	case *time.Time:
		if x == nil {
			return "—"
		}
		d = s.d.Now().Sub(*x)
	case float64:
		d = time.Duration(x * float64(time.Second))
	case *float64:
		if x == nil {
			return "—"
		}
		d = time.Duration(*x * float64(time.Second))
	}
	return d.Round(time.Second).String()
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ", ")
}
