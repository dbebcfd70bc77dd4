-- CreateEnum
CREATE TYPE "RunStatus" AS ENUM ('QUEUED', 'RUNNING', 'INTERRUPTED', 'COMPLETED', 'FAILED', 'CANCELLED');

-- CreateEnum
CREATE TYPE "AuditStatus" AS ENUM ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'INTERRUPTED', 'ABANDONED');

-- CreateEnum
CREATE TYPE "ToolCallStatus" AS ENUM ('PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED');

-- CreateEnum
CREATE TYPE "MessageRole" AS ENUM ('USER', 'ASSISTANT', 'TOOL', 'SYSTEM');

-- CreateEnum
CREATE TYPE "MessageType" AS ENUM ('chat', 'model_audit', 'tool_audit');

-- CreateTable
CREATE TABLE "thread" (
    "id" UUID NOT NULL,
    "title" TEXT,
    "owner_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "thread_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run" (
    "id" UUID NOT NULL,
    "thread_id" UUID NOT NULL,
    "status" "RunStatus" NOT NULL DEFAULT 'QUEUED',
    "resumed_from_id" UUID,
    "lease_owner" TEXT,
    "lease_epoch" INTEGER NOT NULL DEFAULT 0,
    "lease_expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_order" BIGSERIAL NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "error" JSONB,

    CONSTRAINT "run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "message" (
    "id" UUID NOT NULL,
    "thread_id" UUID NOT NULL,
    "run_id" UUID,
    "role" "MessageRole" NOT NULL,
    "message_type" "MessageType" NOT NULL DEFAULT 'chat',
    "content" JSONB,
    "operation_id" TEXT,
    "name" TEXT,
    "sequence" BIGINT,
    "finished_sequence" BIGINT,
    "status" "AuditStatus",
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "duration_ms" INTEGER,
    "start_clock_id" TEXT,
    "start_clock_nanos" BIGINT,
    "end_clock_id" TEXT,
    "end_clock_nanos" BIGINT,
    "input" JSONB,
    "output" JSONB,
    "error" JSONB,
    "usage" JSONB,
    "awaiting_run_terminal" BOOLEAN NOT NULL DEFAULT false,
    "tool_call_row_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tool_call" (
    "id" UUID NOT NULL,
    "thread_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "declared_by_id" UUID NOT NULL,
    "position" INTEGER NOT NULL,
    "tool_call_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "declared_input" JSONB,
    "effective_input" JSONB,
    "status" "ToolCallStatus" NOT NULL DEFAULT 'PENDING',
    "output" JSONB,
    "error" JSONB,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "duration_ms" INTEGER,

    CONSTRAINT "tool_call_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "thread_owner_id_idx" ON "thread"("owner_id");

-- CreateIndex
CREATE INDEX "run_thread_id_created_order_idx" ON "run"("thread_id", "created_order");

-- CreateIndex
CREATE INDEX "run_status_lease_expires_at_idx" ON "run"("status", "lease_expires_at");

-- CreateIndex
CREATE INDEX "run_resumed_from_id_idx" ON "run"("resumed_from_id");

-- CreateIndex
CREATE UNIQUE INDEX "run_created_order_key" ON "run"("created_order");

-- CreateIndex
CREATE INDEX "message_thread_id_message_type_created_at_idx" ON "message"("thread_id", "message_type", "created_at");

-- CreateIndex
CREATE INDEX "message_tool_call_row_id_idx" ON "message"("tool_call_row_id");

-- CreateIndex
CREATE UNIQUE INDEX "message_run_id_role_operation_id_key" ON "message"("run_id", "role", "operation_id");

-- CreateIndex
CREATE INDEX "tool_call_run_id_tool_call_id_idx" ON "tool_call"("run_id", "tool_call_id");

-- CreateIndex
CREATE INDEX "tool_call_thread_id_name_status_idx" ON "tool_call"("thread_id", "name", "status");

-- CreateIndex
CREATE UNIQUE INDEX "tool_call_declared_by_id_tool_call_id_key" ON "tool_call"("declared_by_id", "tool_call_id");

-- AddForeignKey
ALTER TABLE "run" ADD CONSTRAINT "run_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run" ADD CONSTRAINT "run_resumed_from_id_fkey" FOREIGN KEY ("resumed_from_id") REFERENCES "run"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_tool_call_row_id_fkey" FOREIGN KEY ("tool_call_row_id") REFERENCES "tool_call"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_call" ADD CONSTRAINT "tool_call_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_call" ADD CONSTRAINT "tool_call_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_call" ADD CONSTRAINT "tool_call_declared_by_id_fkey" FOREIGN KEY ("declared_by_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
