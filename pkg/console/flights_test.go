package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlightSearchAndItsCSVReadTheSameQuery: the page and its CSV refuse the same searches (more
// than 40 characters, a day not YYYY-MM-DD) with the same words.
func TestFlightSearchAndItsCSVReadTheSameQuery(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	for _, c := range []struct {
		query url.Values
		says  string
	}{
		{url.Values{"q": {strings.Repeat("C", 41)}}, "Search for at most 40 characters."},
		{url.Values{"q": {"CA"}, "day": {"23/01/2021"}}, "The day must be YYYY-MM-DD."},
	} {
		for _, path := range []string{"/flights", "/flights.csv"} {
			code, body := get(t, op, w.srv.URL+path+"?"+c.query.Encode())
			require.Equal(t, http.StatusBadRequest, code, "%s?%s", path, c.query.Encode())
			require.Contains(t, body, c.says, "%s?%s", path, c.query.Encode())
		}
	}
	code, _ := get(t, op, w.srv.URL+"/flights.csv?"+url.Values{"q": {strings.Repeat("C", 40)}}.Encode())
	require.Equal(t, http.StatusOK, code, "40 characters are searched")
}
