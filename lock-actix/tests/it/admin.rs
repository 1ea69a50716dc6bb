//! The admin console as an actix-web scope (`lock_actix::admin::scope`), through actix-web's
//! test utilities: nothing without credentials, the JSON API and the page with them, and a
//! body over [`MAX_ADMIN_BODY`] refused before it is read. (The page itself in a browser:
//! lock-tower's `admin_browser` test.)

use actix_web::http::StatusCode;
use actix_web::{test, App};
use lock_core::http::admin::{AdminConsole, TokenAuth, MAX_ADMIN_BODY};
use lock_core::{LockClient, MemoryBackend};

const TOKEN: &str = "an-actix-test-admin-token";

fn bearer() -> (&'static str, String) {
    ("authorization", format!("Bearer {TOKEN}"))
}

fn console(locks: &LockClient) -> AdminConsole {
    AdminConsole::builder(locks.clone(), TokenAuth::new(TOKEN).unwrap())
        .allow_force_release()
        .build()
}

#[actix_web::test]
async fn without_credentials_the_api_answers_401_and_releases_nothing() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("order:42").await.unwrap();
    let app =
        test::init_service(App::new().service(lock_actix::admin::scope("/admin", console(&locks))))
            .await;
    let keys = test::TestRequest::get().uri("/admin/api/keys").to_request();
    let answer = test::call_service(&app, keys).await;
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        answer.headers().get("www-authenticate").unwrap(),
        "Bearer",
        "a script is told how to authenticate"
    );
    let body = test::read_body(answer).await;
    assert!(!String::from_utf8_lossy(&body).contains("order:42"));
    // A release without credentials (and with a wrong token) changes nothing.
    for authorization in [None, Some("Bearer not-the-admin-token-at-all")] {
        let mut release = test::TestRequest::post()
            .uri("/admin/api/release")
            .insert_header(("content-type", "application/x-www-form-urlencoded"))
            .set_payload("key=order%3A42&reason=no+credentials");
        if let Some(value) = authorization {
            release = release.insert_header(("authorization", value));
        }
        let answer = test::call_service(&app, release.to_request()).await;
        assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    }
    assert!(!held.is_lost());
    let seen = locks.admin().inspect("order:42").await.unwrap();
    assert_eq!(seen.holders[0].owner, held.owner_token(), "still held");
    assert!(locks.admin().audit(None, 10).await.unwrap().is_empty());
    assert!(held.release().await.unwrap());
}

#[actix_web::test]
async fn with_the_token_the_api_lists_the_held_key_and_the_page_loads_its_script() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("order:42").await.unwrap();
    let app =
        test::init_service(App::new().service(lock_actix::admin::scope("/admin", console(&locks))))
            .await;
    let keys = test::TestRequest::get()
        .uri("/admin/api/keys")
        .insert_header(bearer())
        .to_request();
    let answer = test::call_service(&app, keys).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        answer.headers().get("content-type").unwrap(),
        "application/json"
    );
    let body = String::from_utf8(test::read_body(answer).await.to_vec()).unwrap();
    assert!(body.contains(r#""key":"order:42""#), "{body}");
    assert!(body.contains(r#""status":"held""#), "{body}");
    // The page, at the mount with and without its slash: it loads its script from the mount.
    for uri in ["/admin/", "/admin"] {
        let page = test::TestRequest::get()
            .uri(uri)
            .insert_header(bearer())
            .to_request();
        let answer = test::call_service(&app, page).await;
        assert_eq!(answer.status(), StatusCode::OK, "{uri}");
        let policy = answer.headers().get("content-security-policy").unwrap();
        assert!(policy.to_str().unwrap().contains("script-src 'self'"));
        let page = String::from_utf8(test::read_body(answer).await.to_vec()).unwrap();
        assert!(
            page.contains(r#"<script src="/admin/admin.js"></script>"#),
            "{uri}: {page}"
        );
    }
    // The script itself is public (it carries no data), and served from the binary.
    let script = test::TestRequest::get().uri("/admin/admin.js").to_request();
    let answer = test::call_service(&app, script).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        answer.headers().get("content-type").unwrap(),
        "text/javascript"
    );
    assert!(!held.is_lost());
    assert!(held.release().await.unwrap());
}

#[actix_web::test]
async fn a_body_over_the_limit_is_413_and_changes_nothing() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("order:42").await.unwrap();
    let app =
        test::init_service(App::new().service(lock_actix::admin::scope("/admin", console(&locks))))
            .await;
    let mut body = b"key=order%3A42&reason=".to_vec();
    body.resize(MAX_ADMIN_BODY + 1, b'x');
    let release = test::TestRequest::post()
        .uri("/admin/api/release")
        .insert_header(bearer())
        .insert_header(("content-type", "application/x-www-form-urlencoded"))
        .set_payload(body)
        .to_request();
    let answer = test::call_service(&app, release).await;
    assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(!held.is_lost());
    assert!(held.release().await.unwrap());
}
