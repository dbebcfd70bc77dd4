-- Stream sessions signed out (DELETE /graphql/stream-session): a session token whose id is here
-- opens no stream, on any instance, until it expires (then its row is useless and removed).

-- CreateTable
CREATE TABLE "stream_session_revocation" (
    "session_id" UUID NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "stream_session_revocation_pkey" PRIMARY KEY ("session_id")
);
