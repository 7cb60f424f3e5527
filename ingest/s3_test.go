package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"reconcile/ingest"
)

// These tests run against a real S3 server: versitygw, started here on a
// free loopback port over a temporary folder. scripts/test installs it.

const (
	s3Access = "reconcile-test"
	s3Secret = "reconcile-test-secret"
)

func versitygw(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("this test needs the versitygw S3 server, which is not installed: run scripts/test (it installs it), " +
		"or go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
	return ""
}

// startS3 starts versitygw and points the AWS configuration chain at it.
func startS3(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(versitygw(t), "--port", addr, "--access", s3Access, "--secret", s3Secret, "posix", t.TempDir())
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s: %s", addr, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+addr)
	t.Setenv("AWS_ACCESS_KEY_ID", s3Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3Secret)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
}

func newS3(t *testing.T) *ingest.S3 {
	t.Helper()
	c, err := ingest.NewS3(context.Background(), ingest.S3Options{PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// put writes objects with the SDK, as the provider's drop would.
func put(t *testing.T, bucket string, objects map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(os.Getenv("AWS_ENDPOINT_URL_S3")), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s3Access, SecretAccessKey: s3Secret}, nil
		})})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		var exists interface{ ErrorCode() string }
		if !errors.As(err, &exists) || !strings.HasPrefix(exists.ErrorCode(), "BucketAlready") {
			t.Fatal(err)
		}
	}
	for k, v := range objects {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(v)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestS3(t *testing.T) {
	startS3(t)
	ctx := context.Background()
	many := map[string][]byte{}
	for i := range 1003 {
		many[fmt.Sprintf("stripe/2026/11/%04d.csv", i)] = []byte(itemized)
	}
	many["stripe/2026/11/"] = nil // a folder marker, not an input
	put(t, "finance", many)
	put(t, "finance", map[string][]byte{"adyen/latest.csv.gz": gz(t, []byte(itemized)), "stripe/2026/10/old.csv": []byte(itemized)})

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
