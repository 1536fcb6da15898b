-- shiftbox banking schema (schema_version 1). Ownership is a relation (foreign keys), never a copied list.
CREATE TABLE customers (
    customer_id    TEXT PRIMARY KEY,
    full_name      TEXT NOT NULL,
    date_of_birth  TEXT NOT NULL,            -- YYYY-MM-DD
    email          TEXT NOT NULL,
    phone_number   TEXT NOT NULL,            -- E.164, e.g. +15551234567
    street         TEXT NOT NULL,
    city           TEXT NOT NULL,
    state          TEXT NOT NULL,
    postal_code    TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX customers_phone ON customers(phone_number);
CREATE INDEX customers_name ON customers(full_name COLLATE NOCASE, date_of_birth);

CREATE TABLE accounts (
    account_id        TEXT PRIMARY KEY,
    customer_id       TEXT NOT NULL REFERENCES customers(customer_id),
    type              TEXT NOT NULL CHECK (type IN ('checking', 'savings', 'credit_card')),
    is_business       INTEGER NOT NULL DEFAULT 0 CHECK (is_business IN (0, 1)),
    masked_number     TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('Active', 'Frozen', 'Closed')),
    current_balance   REAL NOT NULL,
    available_balance REAL NOT NULL
);
CREATE INDEX accounts_customer ON accounts(customer_id);

CREATE TABLE cards (
    card_id     TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(account_id),
    type        TEXT NOT NULL CHECK (type IN ('debit', 'credit')),
    last4       TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('Active', 'Locked', 'Closed')),
    lock_reason TEXT
);
CREATE INDEX cards_account ON cards(account_id);

CREATE TABLE statements (
    statement_id TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(account_id),
    period_start TEXT NOT NULL,
    period_end   TEXT NOT NULL,
    issue_date   TEXT NOT NULL,
    total_due    REAL NOT NULL,
    minimum_due  REAL NOT NULL,
    due_date     TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('Issued', 'Paid', 'Overdue'))
);
CREATE INDEX statements_account ON statements(account_id, issue_date);

CREATE TABLE transactions (
    tx_id             TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts(account_id),
    timestamp         TEXT NOT NULL,          -- ISO 8601 datetime
    type              TEXT NOT NULL,          -- card_purchase, deposit, billpay, transfer, fee, refund, atm_withdrawal
    amount            REAL NOT NULL,          -- signed: debits negative
    merchant_or_payee TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('Pending', 'Posted', 'Reversed', 'Disputed')),
    reference         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX transactions_account_time ON transactions(account_id, timestamp);

CREATE TABLE payees (
    payee_id     TEXT PRIMARY KEY,
    customer_id  TEXT NOT NULL REFERENCES customers(customer_id),
    name         TEXT NOT NULL,
    deliver_type TEXT NOT NULL CHECK (deliver_type IN ('electronic', 'check')),
    verified     INTEGER NOT NULL DEFAULT 0 CHECK (verified IN (0, 1))
);
CREATE INDEX payees_customer ON payees(customer_id);

CREATE TABLE payment_requests (
    request_id      TEXT PRIMARY KEY,
    customer_id     TEXT NOT NULL REFERENCES customers(customer_id),
    from_account_id TEXT NOT NULL REFERENCES accounts(account_id),
    to_payee_id     TEXT NOT NULL REFERENCES payees(payee_id),
    amount          REAL NOT NULL CHECK (amount > 0),
    status          TEXT NOT NULL CHECK (status IN
                    ('Awaiting Payment', 'Authorized', 'Settled', 'Canceled', 'Expired', 'Failed')),
    origin          TEXT NOT NULL DEFAULT 'user',
    created_at      TEXT NOT NULL,
    expires_at      TEXT,
    settled_tx_id   TEXT REFERENCES transactions(tx_id),
    failure_reason  TEXT
);
CREATE INDEX payment_requests_customer ON payment_requests(customer_id, status);

CREATE TABLE disputes (
    dispute_id  TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(account_id),
    tx_id       TEXT NOT NULL REFERENCES transactions(tx_id),
    reason_code TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('Draft', 'Submitted', 'Under Review',
                'Resolved-Customer Favor', 'Resolved-Merchant Favor', 'Closed')),
    opened_at   TEXT NOT NULL
);
CREATE INDEX disputes_tx ON disputes(tx_id);

CREATE TABLE parked_tasks (
    parked_task_id  TEXT PRIMARY KEY,
    current_task_id TEXT NOT NULL,
    resume_hint     TEXT,
    status          TEXT NOT NULL CHECK (status IN ('Parked', 'Resumed')),
    parked_at       TEXT NOT NULL,
    resumed_at      TEXT
);

CREATE TABLE transfers (
    transfer_id  TEXT PRIMARY KEY,
    summary      TEXT NOT NULL,
    requested_at TEXT NOT NULL
);
