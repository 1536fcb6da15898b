-- shiftbox airline schema (schema_version 1). Times are US Eastern (EST), as in tau2's airline data.
-- Lists (a user's payment methods, a reservation's flights, passengers and payments) are relations.
CREATE TABLE airports (
    iata TEXT PRIMARY KEY CHECK (length(iata) = 3 AND iata = upper(iata)),
    city TEXT NOT NULL
);

CREATE TABLE flights (
    flight_number                TEXT PRIMARY KEY,    -- HAT001 … HAT300
    origin                       TEXT NOT NULL REFERENCES airports(iata),
    destination                  TEXT NOT NULL REFERENCES airports(iata),
    scheduled_departure_time_est TEXT NOT NULL,       -- HH:MM:SS
    scheduled_arrival_time_est   TEXT NOT NULL,       -- HH:MM:SS, with '+1' when it lands the next day
    CHECK (origin <> destination)
);
CREATE INDEX flights_origin ON flights(origin, destination);

-- One row per flight and date. Seats and prices exist only while the flight can be booked
-- ('available'); the other statuses carry the estimated or actual times instead.
CREATE TABLE flight_dates (
    flight_number                TEXT NOT NULL REFERENCES flights(flight_number),
    date                         TEXT NOT NULL,       -- YYYY-MM-DD
    status                       TEXT NOT NULL CHECK (status IN
                                 ('available', 'on time', 'delayed', 'flying', 'landed', 'cancelled')),
    seats_basic_economy          INTEGER CHECK (seats_basic_economy >= 0),
    seats_economy                INTEGER CHECK (seats_economy >= 0),
    seats_business               INTEGER CHECK (seats_business >= 0),
    price_basic_economy          REAL CHECK (price_basic_economy > 0),
    price_economy                REAL CHECK (price_economy > 0),
    price_business               REAL CHECK (price_business > 0),
    estimated_departure_time_est TEXT,                -- on time, delayed
    estimated_arrival_time_est   TEXT,                -- on time, delayed, flying
    actual_departure_time_est    TEXT,                -- flying, landed
    actual_arrival_time_est      TEXT,                -- landed
    PRIMARY KEY (flight_number, date),
    CHECK ((status = 'available') = (seats_economy IS NOT NULL AND price_economy IS NOT NULL
           AND seats_basic_economy IS NOT NULL AND seats_business IS NOT NULL
           AND price_basic_economy IS NOT NULL AND price_business IS NOT NULL))
);

CREATE TABLE users (
    user_id    TEXT PRIMARY KEY,                      -- e.g. mia_li_3668
    first_name TEXT NOT NULL,
    last_name  TEXT NOT NULL,
    email      TEXT NOT NULL,
    dob        TEXT NOT NULL,                         -- YYYY-MM-DD
    address1   TEXT NOT NULL,
    address2   TEXT,
    city       TEXT NOT NULL,
    state      TEXT NOT NULL,
    country    TEXT NOT NULL,
    zip        TEXT NOT NULL,
    membership TEXT NOT NULL CHECK (membership IN ('regular', 'silver', 'gold'))
);

CREATE TABLE saved_passengers (
    user_id    TEXT NOT NULL REFERENCES users(user_id),
    position   INTEGER NOT NULL,
    first_name TEXT NOT NULL,
    last_name  TEXT NOT NULL,
    dob        TEXT NOT NULL,
    PRIMARY KEY (user_id, position)
);

-- Gift cards and certificates carry a balance. A certificate is redeemed whole when it pays for a
-- booking (what it does not cover is forfeited) and drops out of the user's profile.
CREATE TABLE payment_methods (
    payment_id TEXT PRIMARY KEY,                      -- credit_card_4421486, gift_card_…, certificate_…
    user_id    TEXT NOT NULL REFERENCES users(user_id),
    source     TEXT NOT NULL CHECK (source IN ('credit_card', 'gift_card', 'certificate')),
    brand      TEXT,                                  -- credit cards
    last_four  TEXT,                                  -- credit cards
    balance    REAL CHECK (balance >= 0),             -- gift cards, certificates
    status     TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'redeemed')),
    CHECK ((source = 'credit_card') = (balance IS NULL)),
    CHECK ((source = 'credit_card') = (last_four IS NOT NULL)),
    CHECK (status = 'active' OR source = 'certificate')
);
CREATE INDEX payment_methods_user ON payment_methods(user_id);

CREATE TABLE reservations (
    reservation_id   TEXT PRIMARY KEY,                -- six letters/digits, e.g. 4WQ150
    user_id          TEXT NOT NULL REFERENCES users(user_id),
    origin           TEXT NOT NULL REFERENCES airports(iata),
    destination      TEXT NOT NULL REFERENCES airports(iata),
    flight_type      TEXT NOT NULL CHECK (flight_type IN ('one_way', 'round_trip')),
    cabin            TEXT NOT NULL CHECK (cabin IN ('basic_economy', 'economy', 'business')),
    created_at       TEXT NOT NULL,                   -- YYYY-MM-DDTHH:MM:SS (EST)
    total_baggages   INTEGER NOT NULL CHECK (total_baggages >= 0),
    nonfree_baggages INTEGER NOT NULL CHECK (nonfree_baggages >= 0 AND nonfree_baggages <= total_baggages),
    insurance        TEXT NOT NULL CHECK (insurance IN ('yes', 'no')),
    status           TEXT NOT NULL CHECK (status IN ('active', 'cancelled'))
);
CREATE INDEX reservations_user ON reservations(user_id, created_at);

CREATE TABLE reservation_flights (
    reservation_id TEXT NOT NULL REFERENCES reservations(reservation_id),
    position       INTEGER NOT NULL,
    flight_number  TEXT NOT NULL,
    date           TEXT NOT NULL,
    price          REAL NOT NULL CHECK (price > 0),   -- per passenger, as booked
    PRIMARY KEY (reservation_id, position),
    FOREIGN KEY (flight_number, date) REFERENCES flight_dates(flight_number, date)
);
CREATE INDEX reservation_flights_flight ON reservation_flights(flight_number, date);

CREATE TABLE reservation_passengers (
    reservation_id TEXT NOT NULL REFERENCES reservations(reservation_id),
    position       INTEGER NOT NULL,
    first_name     TEXT NOT NULL,
    last_name      TEXT NOT NULL,
    dob            TEXT NOT NULL,
    PRIMARY KEY (reservation_id, position)
);

-- Payment history: charges are positive, refunds negative (to the method that paid).
CREATE TABLE payments (
    reservation_id TEXT NOT NULL REFERENCES reservations(reservation_id),
    position       INTEGER NOT NULL,
    payment_id     TEXT NOT NULL REFERENCES payment_methods(payment_id),
    amount         REAL NOT NULL CHECK (amount <> 0),
    kind           TEXT NOT NULL CHECK (kind IN ('payment', 'refund')),
    created_at     TEXT NOT NULL,
    PRIMARY KEY (reservation_id, position),
    CHECK ((kind = 'payment') = (amount > 0))
);
CREATE INDEX payments_method ON payments(payment_id);

CREATE TABLE transfers (
    transfer_id  TEXT PRIMARY KEY,
    summary      TEXT NOT NULL,
    requested_at TEXT NOT NULL
);
