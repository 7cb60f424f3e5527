package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"reconcile/ingest"
	"reconcile/ingest/s3test"
)

// These tests run against a real S3 server: versitygw (see s3test).

func newS3(t *testing.T) *ingest.S3 {
	t.Helper()
	c, err := ingest.NewS3(context.Background(), ingest.S3Options{PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestS3(t *testing.T) {
	s3test.Start(t)
	ctx := context.Background()
	many := map[string][]byte{}
	for i := range 1003 {
		many[fmt.Sprintf("stripe/2026/11/%04d.csv", i)] = []byte(itemized)
	}
	many["stripe/2026/11/"] = nil // a folder marker, not an input
	s3test.Put(t, "finance", many)
	s3test.Put(t, "finance", map[string][]byte{"adyen/latest.csv.gz": gz(t, []byte(itemized)), "stripe/2026/10/old.csv": []byte(itemized)})

	t.Run("ListingFollowsPagesPastAThousandObjects", func(t *testing.T) {
		srcs, err := ingest.Expand(ctx, []string{"s3://finance/stripe/2026/11/"}, nil, newS3(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(srcs) != 1003 {
			t.Fatalf("listed %d objects, want 1003", len(srcs))
		}
		for i, s := range srcs {
			if want := fmt.Sprintf("s3://finance/stripe/2026/11/%04d.csv", i); s.URI != want || s.ETag == "" || s.Size != int64(len(itemized)) {
				t.Fatalf("source %d = %+v, want %s with an ETag and size %d", i, s, want, len(itemized))
			}
		}
		in, err := ingest.Read(ctx, srcs[1002], &ingest.Options{}, &collect{})
		if err != nil || in.Evidence != 4 || in.Rejected != 1 || in.ETag != srcs[1002].ETag {
			t.Errorf("Read(%s) = %+v, %v", srcs[1002].URI, in, err)
		}
	})

	t.Run("ReadsTheSameAsALocalFile", func(t *testing.T) {
		srcs, err := ingest.Expand(ctx, []string{"s3://finance/adyen/latest.csv.gz"}, nil, newS3(t))
		if err != nil || len(srcs) != 1 {
			t.Fatalf("Expand = %v, %v", srcs, err)
		}
		rc := &collect{}
		rin, err := ingest.Read(ctx, srcs[0], &ingest.Options{}, rc)
		if err != nil {
			t.Fatal(err)
		}
		lin, lc, err := read(t, write(t, t.TempDir(), "latest.csv.gz", gz(t, []byte(itemized))), nil)
		if err != nil {
			t.Fatal(err)
		}
		if rin.Rows != lin.Rows || rin.Evidence != lin.Evidence || rin.Hash != lin.Hash || len(rc.evidence) != len(lc.evidence) {
			t.Errorf("S3 read %+v differs from the local read %+v", rin, lin)
		}
		for i := range rc.evidence {
			rc.evidence[i].URI, lc.evidence[i].URI = "", ""
		}
		if fmt.Sprint(rc.evidence) != fmt.Sprint(lc.evidence) {
			t.Errorf("S3 evidence differs from the local evidence")
		}
	})

	t.Run("MissingBucketIsAClearError", func(t *testing.T) {
		_, err := ingest.Expand(ctx, []string{"s3://no-such-bucket/x/"}, nil, newS3(t))
		var ie *ingest.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "s3://no-such-bucket/x/") || !strings.Contains(err.Error(), "bucket does not exist") {
			t.Errorf("error = %v; want an InputError naming the URL and saying the bucket does not exist", err)
		}
	})

	t.Run("WrongCredentialsAreAClearError", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
		_, err := ingest.Expand(ctx, []string{"s3://finance/stripe/"}, nil, newS3(t))
		var ie *ingest.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "access denied") || strings.Contains(err.Error(), "not-the-secret") {
			t.Errorf("error = %v; want an InputError saying access denied, without the secret", err)
		}
	})
}
