package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// S3 lists and reads objects under s3:// prefixes.
type S3 struct {
	client *s3.Client
}

// S3Options configure the S3 client. Everything else comes from the
// standard AWS configuration chain: credentials, region, and
// AWS_ENDPOINT_URL_S3 for S3-compatible servers.
type S3Options struct {
	// PathStyle addresses buckets as ENDPOINT/bucket/key instead of
	// bucket.ENDPOINT/key, as most S3-compatible servers want.
	PathStyle bool
	// Log gets what the AWS SDK has to say (a retry, a checksum it could
	// not check), so that it reaches stderr in the command's log format;
	// nil drops it.
	Log *slog.Logger
}

// NewS3 builds a client from the standard AWS configuration chain.
func NewS3(ctx context.Context, opts S3Options) (*S3, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("S3 configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // S3-compatible servers ignore it; AWS needs one to sign
	}
	cfg.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if opts.Log == nil {
			return
		}
		level := slog.LevelWarn
		if c == logging.Debug {
			level = slog.LevelDebug
		}
		opts.Log.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "aws-sdk")
	})
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = opts.PathStyle })
	return &S3{client: client}, nil
}

func splitS3(uri string) (bucket, key string, err error) {
	rest := strings.TrimPrefix(uri, "s3://")
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", inputErr(uri, "no bucket in the S3 URL (want s3://bucket/prefix)")
	}
	return bucket, key, nil
}

// List returns every object under the s3://bucket/prefix uri, following the
// listing's pages, in key order. Folder markers (keys ending in /) are
// skipped.
func (c *S3) List(ctx context.Context, uri string) ([]Source, error) {
	bucket, prefix, err := splitS3(uri)
	if err != nil {
		return nil, err
	}
	var out []Source
	pages := s3.NewListObjectsV2Paginator(c.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, s3Err(uri, "list", err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasSuffix(key, "/") {
				continue
			}
			out = append(out, c.object(bucket, key, aws.ToInt64(o.Size), strings.Trim(aws.ToString(o.ETag), `"`)))
		}
	}
	return out, nil
}

func (c *S3) object(bucket, key string, size int64, etag string) Source {
	uri := "s3://" + bucket + "/" + key
	return Source{URI: uri, Size: size, ETag: etag, open: func(ctx context.Context) (io.ReadCloser, error) {
		obj, err := c.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), IfMatch: aws.String(`"` + etag + `"`)})
		if err != nil {
			return nil, s3Err(uri, "read", err)
		}
		return obj.Body, nil
	}}
}

// s3Err says what went wrong in words a person can act on.
func s3Err(uri, op string, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket":
			return inputErr(uri, "the bucket does not exist")
		case "NoSuchKey":
			return inputErr(uri, "the object does not exist")
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken":
			return inputErr(uri, "access denied (%s): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or the profile and its permissions", ae.ErrorCode())
		case "PreconditionFailed":
			return inputErr(uri, "the object changed while it was being read; run again")
		}
		return inputErr(uri, "%s: %s: %s", op, ae.ErrorCode(), ae.ErrorMessage())
	}
	return inputErr(uri, "%s: %v", op, err)
}
