-- The worker's idempotency key of the claim that holds the run's lease (ClaimRunInput.claimId):
-- a retried claim with the same key gets that lease back.
ALTER TABLE "run" ADD COLUMN "claim_id" TEXT;
