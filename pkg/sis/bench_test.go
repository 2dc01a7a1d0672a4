package sis

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkDecodeFLOP decodes the FLOP samples round-robin; msgs/s is the
// decoder's throughput for single flight operations (run with -cpu 1).
func BenchmarkDecodeFLOP(b *testing.B) {
	files, err := filepath.Glob(filepath.Join(samplesDir, "FLOP", "*.xml"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no FLOP samples: %v", err)
	}
	msgs := make([][]byte, len(files))
	total := 0
	for i, f := range files {
		if msgs[i], err = os.ReadFile(f); err != nil {
			b.Fatal(err)
		}
		total += len(msgs[i])
	}
	b.SetBytes(int64(total / len(msgs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(msgs[i%len(msgs)], Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkDecodeSCHD decodes a SCHD of 10,000 records built from the sample's
// two; MB/s is the decoder's throughput for schedules (run with -cpu 1).
func BenchmarkDecodeSCHD(b *testing.B) {
	raw := bigSchedule(b, 5000)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := Decode(raw, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Schedule.Records) != 10000 {
			b.Fatal("records lost")
		}
	}
}

// bigSchedule repeats the two FLTR records of SCHD/01_DNLD n times with
// distinct FLIDs.
func bigSchedule(tb testing.TB, n int) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(samplesDir, "SCHD", "01_DNLD.xml"))
	if err != nil {
		tb.Fatal(err)
	}
	start := bytes.Index(raw, []byte("<FLTR>"))
	end := bytes.LastIndex(raw, []byte("</FLTR>")) + len("</FLTR>")
	recs := raw[start:end]
	var buf bytes.Buffer
	buf.Write(raw[:bytes.Index(raw, []byte("<RECS>"))])
	buf.WriteString("<RECS>" + strconv.Itoa(2*n) + "</RECS>\n")
	for i := 0; i < n; i++ {
		r := bytes.Replace(recs, []byte("<FLID>15</FLID>"), []byte("<FLID>"+strconv.Itoa(100000+2*i)+"</FLID>"), 1)
		r = bytes.Replace(r, []byte("<FLID>16</FLID>"), []byte("<FLID>"+strconv.Itoa(100001+2*i)+"</FLID>"), 1)
		buf.Write(r)
		buf.WriteByte('\n')
	}
	buf.Write(raw[end:])
	return buf.Bytes()
}

// BenchmarkDecodeFLOPAfterSCHD decodes a schedule of 1,000 records and then 200 FLOP samples, as
// a processor does when a snapshot comes between flight updates: the FLOPs reuse the schedule's
// element arena.
func BenchmarkDecodeFLOPAfterSCHD(b *testing.B) {
	files, err := filepath.Glob(filepath.Join(samplesDir, "FLOP", "*.xml"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no FLOP samples: %v", err)
	}
	msgs := make([][]byte, len(files))
	for i, f := range files {
		if msgs[i], err = os.ReadFile(f); err != nil {
			b.Fatal(err)
		}
	}
	sched := bigSchedule(b, 500)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(sched, Options{}); err != nil {
			b.Fatal(err)
		}
		for i := range 200 {
			if _, err := Decode(msgs[i%len(msgs)], Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
