-- shiftbox retail schema (schema_version 1). Ownership is a relation (foreign keys), never a copied list:
-- a user's orders and payment methods, an order's items and payments are rows pointing at their owner.
CREATE TABLE products (
    product_id TEXT PRIMARY KEY,             -- digit string, e.g. 9523456873 (unrelated to item ids)
    name       TEXT NOT NULL UNIQUE          -- product type, e.g. 'T-Shirt'
);

CREATE TABLE variants (
    item_id    TEXT PRIMARY KEY,             -- digit string, e.g. 9612497925
    product_id TEXT NOT NULL REFERENCES products(product_id),
    options    TEXT NOT NULL,                -- JSON object option -> value, in display order
    available  INTEGER NOT NULL CHECK (available IN (0, 1)),
    price      REAL NOT NULL CHECK (price > 0)
);
CREATE INDEX variants_product ON variants(product_id);

CREATE TABLE users (
    user_id    TEXT PRIMARY KEY,             -- e.g. yusuf_rossi_9620
    first_name TEXT NOT NULL,
    last_name  TEXT NOT NULL,
    email      TEXT NOT NULL UNIQUE COLLATE NOCASE,
    address1   TEXT NOT NULL,                -- default shipping address
    address2   TEXT NOT NULL DEFAULT '',
    city       TEXT NOT NULL,
    state      TEXT NOT NULL,
    country    TEXT NOT NULL,
    zip        TEXT NOT NULL
);
CREATE INDEX users_zip ON users(zip);

CREATE TABLE payment_methods (
    payment_method_id TEXT PRIMARY KEY,      -- credit_card_…, gift_card_…, paypal_…
    user_id           TEXT NOT NULL REFERENCES users(user_id),
    source            TEXT NOT NULL CHECK (source IN ('credit_card', 'gift_card', 'paypal')),
    brand             TEXT,                  -- credit_card only, e.g. visa
    last_four         TEXT,                  -- credit_card only
    balance           REAL,                  -- gift_card only
    CHECK ((source = 'credit_card') = (brand IS NOT NULL AND last_four IS NOT NULL)),
    CHECK ((source = 'gift_card') = (balance IS NOT NULL)),
    CHECK (balance IS NULL OR balance >= 0)
);
CREATE INDEX payment_methods_user ON payment_methods(user_id);

CREATE TABLE orders (
    order_id                   TEXT PRIMARY KEY,   -- e.g. #W2378156
    user_id                    TEXT NOT NULL REFERENCES users(user_id),
    status                     TEXT NOT NULL CHECK (status IN ('pending', 'processed', 'delivered',
                               'cancelled', 'pending (item modified)', 'exchange requested',
                               'return requested')),
    address1                   TEXT NOT NULL,      -- shipping address of this order
    address2                   TEXT NOT NULL DEFAULT '',
    city                       TEXT NOT NULL,
    state                      TEXT NOT NULL,
    country                    TEXT NOT NULL,
    zip                        TEXT NOT NULL,
    cancel_reason              TEXT CHECK (cancel_reason IN ('no longer needed', 'ordered by mistake')),
    exchange_payment_method_id TEXT REFERENCES payment_methods(payment_method_id),
    exchange_price_difference  REAL,               -- new minus old prices; > 0 the user pays, < 0 is refunded
    return_payment_method_id   TEXT REFERENCES payment_methods(payment_method_id)
);
CREATE INDEX orders_user ON orders(user_id);

CREATE TABLE order_items (
    order_id          TEXT NOT NULL REFERENCES orders(order_id),
    line_no           INTEGER NOT NULL,         -- 1-based position in the order (an item may repeat)
    item_id           TEXT NOT NULL REFERENCES variants(item_id),
    price             REAL NOT NULL CHECK (price > 0),  -- price paid for this line
    return_requested  INTEGER NOT NULL DEFAULT 0 CHECK (return_requested IN (0, 1)),
    exchange_item_id  TEXT REFERENCES variants(item_id),  -- the variant asked for in an exchange
    PRIMARY KEY (order_id, line_no)
);

CREATE TABLE fulfillments (
    order_id       TEXT NOT NULL REFERENCES orders(order_id),
    fulfillment_no INTEGER NOT NULL,            -- 1-based shipment number within the order
    tracking_ids   TEXT NOT NULL,               -- JSON array of carrier tracking ids
    item_ids       TEXT NOT NULL,               -- JSON array of the item ids shipped
    PRIMARY KEY (order_id, fulfillment_no)
);

CREATE TABLE order_payments (
    order_id          TEXT NOT NULL REFERENCES orders(order_id),
    seq               INTEGER NOT NULL,         -- 1-based, in the order they happened
    transaction_type  TEXT NOT NULL CHECK (transaction_type IN ('payment', 'refund')),
    amount            REAL NOT NULL CHECK (amount > 0),
    payment_method_id TEXT NOT NULL REFERENCES payment_methods(payment_method_id),
    PRIMARY KEY (order_id, seq)
);

CREATE TABLE transfers (
    transfer_id  TEXT PRIMARY KEY,
    summary      TEXT NOT NULL,
    requested_at TEXT NOT NULL
);
